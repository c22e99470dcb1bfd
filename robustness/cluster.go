package robustness

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"github.com/listwatch-labs/listwatch-labs/labkit"
)

// HACluster is a labcluster on a three-member etcd (`labcluster up
// --etcd-members 3`, here as a child of the test binary): the real
// kube-apiserver v1.37.0 over it, and the etcd the course's stack stores in
// too, so one set of etcd faults hits both stacks. The course's stack keeps
// its keys under its own prefix, /course, apart from the kube-apiserver's,
// which start at `DefaultEtcdPathPrefix`, /registry
// (k8s.io/kubernetes@v1.37.0/pkg/kubeapiserver/options/options.go:33).
// Each member is its own process: a kill is a crash.
type HACluster struct {
	*labkit.Cluster
	Dir   string
	State *clusterstate.State
	bin   string // labcluster
	// next is the member the next kill-member fault kills (they take
	// turns, so every member is killed in a long run).
	next int
}

// StartHACluster starts etcd (three members) and kube-apiserver in dir.
func StartHACluster(dir string) (*HACluster, error) {
	bin, err := labkit.LabclusterBinary()
	if err != nil {
		return nil, err
	}
	c, err := labkit.StartEmbeddedEtcdMembers(dir, 3, "etcd", "apiserver")
	if err != nil {
		return nil, err
	}
	st, err := clusterstate.Read(dir)
	if err != nil {
		c.Stop()
		return nil, err
	}
	return &HACluster{Cluster: c, Dir: dir, State: st, bin: bin}, nil
}

// labcluster runs a labcluster command on this cluster and returns its
// output.
func (c *HACluster) labcluster(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, c.bin, append(args, "--dir", c.Dir)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("labcluster %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// etcdDowntime is how long a killed member stays down: long enough for
// the apiserver's etcd client to notice, and, for the leader, usually but
// not always long enough for the others to elect a new one. etcd's default
// election timeout is 1 s (`ElectionMs`,
// go.etcd.io/etcd/server/v3@v3.7.0/embed/config.go:534), but raft draws
// each member's timeout afresh from [1 s, 2 s) (`randomizedElectionTimeout`,
// go.etcd.io/raft/v3@v3.7.0/raft.go:2054), so a follower may only start its
// election near the end of the 2 s.
const etcdDowntime = 2 * time.Second

// EtcdFaults are the faults of the three-member etcd, for any stack on
// it: kill a member (they take turns), kill the leader, move leadership.
// A killed member is started again after etcdDowntime.
func (c *HACluster) EtcdFaults() map[string]func(ctx context.Context) (string, []Write, error) {
	killAndRestart := func(ctx context.Context, who string) (string, []Write, error) {
		out, err := c.labcluster(ctx, "etcd", "kill", who)
		if err != nil {
			return "", nil, err
		}
		// "killed etcd member etcd-2 (pid 1234)"
		name := who
		if f := strings.Fields(out); len(f) >= 4 && f[0] == "killed" {
			name = f[3]
		}
		t := time.NewTimer(etcdDowntime)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		// Start it again even when the run is ending: the next seed needs
		// all three.
		if _, err := c.labcluster(context.Background(), "etcd", "start", name); err != nil {
			return out, nil, err
		}
		return fmt.Sprintf("%s; down %s, started again", out, etcdDowntime), nil, nil
	}
	return map[string]func(ctx context.Context) (string, []Write, error){
		"etcd-kill-member": func(ctx context.Context) (string, []Write, error) {
			m := c.State.Members()[c.next%len(c.State.Members())]
			c.next++
			return killAndRestart(ctx, m.Name)
		},
		"etcd-kill-leader": func(ctx context.Context) (string, []Write, error) {
			return killAndRestart(ctx, "leader")
		},
		"etcd-move-leader": c.moveLeader,
	}
}

// moveLeader asks etcd's leader to hand leadership to another member, as
// `etcdctl move-leader` does, with etcd's `MoveLeader` call, which only
// the leader serves: any other member answers ErrGRPCNotLeader
// (go.etcd.io/etcd/server/v3@v3.7.0/etcdserver/api/v3rpc/maintenance.go:298-307).
func (c *HACluster) moveLeader(ctx context.Context) (string, []Write, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.State.EtcdURLs(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	members, err := cli.MemberList(ctx)
	if err != nil {
		return "", nil, err
	}
	var leaderURL string
	var leader uint64
	for _, u := range c.State.EtcdURLs() {
		st, err := cli.Status(ctx, u)
		if err == nil && st.Header.MemberId == st.Leader {
			leaderURL, leader = u, st.Leader
			break
		}
	}
	if leaderURL == "" {
		return "", nil, fmt.Errorf("no member says it leads")
	}
	var to, from string
	var toID uint64
	for _, m := range members.Members {
		if m.ID == leader {
			from = m.Name
		} else if toID == 0 {
			to, toID = m.Name, m.ID
		}
	}
	// `MoveLeader` must be sent to the leader: others refuse it
	// (go.etcd.io/etcd/server/v3@v3.7.0/etcdserver/api/v3rpc/maintenance.go:298-307).
	one, err := clientv3.New(clientv3.Config{Endpoints: []string{leaderURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", nil, err
	}
	defer one.Close()
	if _, err := one.MoveLeader(ctx, toID); err != nil {
		return "", nil, fmt.Errorf("move leadership from %s to %s: %w", from, to, err)
	}
	return fmt.Sprintf("etcd leadership moved from %s to %s", from, to), nil, nil
}
