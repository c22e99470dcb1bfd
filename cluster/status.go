package main

// `labcluster status`: which cluster is up, for people and for scripts.
//
// Without --dir (and without $LABCLUSTER_DIR) it finds the cluster the way
// labkit does, by clusterstate.Discover: $KUBECONFIG if set, else the
// workspace's .cluster. So scripts/test.sh and the test binaries cannot
// disagree about which cluster they use. With -o env it prints shell
// assignments a script can eval; with -o json the same fields as JSON.
//
// Exit status: 0 when a cluster is up and ready; 3 when none is (start one;
// also when $KUBECONFIG is the workspace's own .cluster/kubeconfig and
// nothing answers there); 1 when $KUBECONFIG names another cluster that does
// not answer (an error: the user asked for that cluster), or on any other
// error; 2 on bad usage.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// statusReport is what status prints; the JSON names are also the env names.
type statusReport struct {
	Up         bool     `json:"up"`
	From       string   `json:"from"`       // KUBECONFIG, workspace, or dir (--dir / $LABCLUSTER_DIR)
	Kubeconfig string   `json:"kubeconfig"` // "" when no cluster is up
	Dir        string   `json:"dir"`        // labcluster state directory; "" for kind or any other cluster
	APIServer  string   `json:"apiserver"`
	Etcd       string   `json:"etcd"`
	PID        int      `json:"pid"` // the supervisor
	Components []string `json:"components"`
	Reason     string   `json:"reason,omitempty"` // why it is not up
}

const fromDir = "dir"

func statusCmd(dirFlag, output string, stdout, stderr io.Writer) int {
	if output != "text" && output != "env" && output != "json" {
		fmt.Fprintf(stderr, "labcluster status: -o %s: want text, env or json\n", output)
		return 2
	}
	r, err := findStatus(dirFlag)
	if err != nil {
		fmt.Fprintf(stderr, "labcluster status: %v\n", err)
		return 1
	}
	switch output {
	case "env":
		io.WriteString(stdout, r.env())
	case "json":
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	default:
		if !r.Up {
			fmt.Fprintf(stderr, "labcluster status: %s\n", r.Reason)
			break
		}
		if r.Dir == "" {
			fmt.Fprintf(stdout, "the cluster of %s (%s) is ready at %s; it is not a labcluster (kind?): it cannot be restarted or compacted here\n", r.Kubeconfig, r.From, r.APIServer)
			break
		}
		// The supervisor knows what each component is doing right now.
		s, err := clusterstate.Read(r.Dir)
		if err == nil {
			var reply string
			if reply, err = ask(s, "status", 5*time.Second); err == nil {
				fmt.Fprintf(stdout, "kubeconfig %s\n%s\n", r.Kubeconfig, reply)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "labcluster status: %v\n", err)
			return 1
		}
	}
	if !r.Up {
		return 3
	}
	return 0
}

// findStatus finds the cluster: the one of --dir or $LABCLUSTER_DIR when
// given, else the one clusterstate.Discover finds.
func findStatus(dirFlag string) (*statusReport, error) {
	if dirFlag != "" || os.Getenv(clusterstate.EnvDir) != "" {
		dir := dirFlag
		if dir == "" {
			dir = os.Getenv(clusterstate.EnvDir)
		}
		dir, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		r := &statusReport{From: fromDir, Dir: dir}
		s, err := clusterstate.Read(dir)
		if err != nil {
			if errors.Is(err, clusterstate.ErrNoCluster) {
				r.Reason = err.Error()
				return r, nil
			}
			return nil, err
		}
		r.fill(s)
		switch kc := clusterstate.Dir(dir).Kubeconfig(); {
		case !s.Running():
			r.Reason = fmt.Sprintf("the cluster in %s is not running (supervisor pid %d is gone); start it with scripts/cluster-up.sh", dir, s.PID)
		default:
			if _, err := readyz(kc); err != nil {
				r.Reason = err.Error()
				break
			}
			r.Up, r.Kubeconfig = true, kc
		}
		return r, nil
	}

	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	var server string
	f, err := clusterstate.Discover(wd, func(kc string) (err error) {
		server, err = readyz(kc)
		return err
	})
	if err != nil {
		return nil, err
	}
	if f == nil {
		// A supervisor that runs but whose apiserver does not answer (etcd
		// lost its quorum, say) is not "no cluster": up would say it is.
		if dir, err := clusterstate.DefaultDir(); err == nil {
			if s, err := clusterstate.Read(dir); err == nil && s.Running() {
				_, rerr := readyz(clusterstate.Dir(dir).Kubeconfig())
				r := &statusReport{From: clusterstate.FromWorkspace, Reason: fmt.Sprintf("the cluster in %s runs (supervisor pid %d) but does not answer: %v; with etcd members killed, labcluster etcd start; or stop it with scripts/cluster-down.sh", dir, s.PID, rerr)}
				r.fill(s)
				return r, nil
			}
		}
		return &statusReport{From: clusterstate.FromWorkspace, Reason: "no cluster is up (none answers at the workspace's .cluster/kubeconfig); start one with scripts/cluster-up.sh"}, nil
	}
	r := &statusReport{Up: true, From: f.From, Kubeconfig: f.Kubeconfig, APIServer: server}
	if f.State != nil {
		r.fill(f.State)
	}
	return r, nil
}

func (r *statusReport) fill(s *State) {
	r.Dir, r.PID, r.Components = s.Dir, s.PID, s.Components
	r.APIServer, r.Etcd = s.APIServerURL(), strings.Join(s.EtcdURLs(), ",")
}

// readyz asks the apiserver of a kubeconfig for /readyz and returns its URL.
func readyz(kubeconfig string) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return "", fmt.Errorf("%s/readyz: %v %s", cfg.Host, err, strings.TrimSpace(string(body)))
	}
	return cfg.Host, nil
}

// env renders the report as shell assignments, one a line, every value
// quoted for the shell, so `eval "$(labcluster status -o env)"` is safe with
// any path.
func (r *statusReport) env() string {
	var b strings.Builder
	for _, kv := range [][2]string{
		{"up", strconv.FormatBool(r.Up)},
		{"from", r.From},
		{"kubeconfig", r.Kubeconfig},
		{"dir", r.Dir},
		{"apiserver", r.APIServer},
		{"etcd", r.Etcd},
		{"pid", strconv.Itoa(r.PID)},
		{"components", strings.Join(r.Components, ",")},
		{"reason", r.Reason},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell: bare when it holds only characters
// no shell treats specially, else in single quotes (a single quote inside
// ends the quoted part, is escaped, and a new quoted part begins).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
