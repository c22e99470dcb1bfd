package labkit

// Tests of labcluster itself (cluster/), through its binary: what `up`
// promises, what `down` leaves, and that a killed supervisor takes its
// components with it.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

func labcluster(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := LabclusterBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("labcluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestLabclusterUpDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole cluster")
	}
	t.Parallel() // a cluster of its own, in its own directory, on free ports
	dir := t.TempDir()
	out := labcluster(t, "up", "--dir", dir)
	if !strings.Contains(out, "ready in") {
		t.Fatalf("up: %s", out)
	}
	// up says where its time went, milestone by milestone, in order.
	rest := out
	for _, step := range []string{"s  credentials and ports ready", "s  etcd listening", "s  apiserver serving", "s  apiserver ready", "s  namespace default exists", "s  node lab-node registered", "labcluster: ready in "} {
		i := strings.Index(rest, step)
		if i < 0 {
			t.Errorf("up's output lacks %q after the steps before it:\n%s", step, out)
			break
		}
		rest = rest[i+len(step):]
	}
	stopped := false
	defer func() {
		if !stopped {
			labcluster(t, "down", "--dir", dir)
		}
	}()
	var st struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil || json.Unmarshal(b, &st) != nil || st.PID == 0 {
		t.Fatalf("state.json: %v %s", err, b)
	}
	pids := append([]int{st.PID}, childrenOf(st.PID)...)
	if len(pids) != 6 {
		t.Errorf("want the supervisor and 5 components, got pids %v", pids)
	}

	t.Run("kubeconfig is 0600 and verifies TLS", func(t *testing.T) {
		kc := filepath.Join(dir, "kubeconfig")
		fi, err := os.Stat(kc)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("kubeconfig mode %o, want 600", fi.Mode().Perm())
		}
		cfg, err := clientcmd.LoadFromFile(kc)
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range cfg.Clusters {
			if len(c.CertificateAuthorityData) == 0 || c.InsecureSkipTLSVerify {
				t.Errorf("cluster %s: certificate-authority-data %d bytes, insecure %v", name, len(c.CertificateAuthorityData), c.InsecureSkipTLSVerify)
			}
		}
	})

	t.Run("every listener is on 127.0.0.1", func(t *testing.T) {
		addrs := listeners(t, pids)
		if len(addrs) < 3 { // etcd client + peer, apiserver
			t.Errorf("found only %v", addrs)
		}
		for _, a := range addrs {
			if !strings.HasPrefix(a, "127.0.0.1:") {
				t.Errorf("listening on %s", a)
			}
		}
		// Where both exist, lsof (what macOS uses) must find the same.
		if _, err := exec.LookPath("lsof"); err == nil && len(addrs) > 0 {
			viaLsof := listenersLsof(t, pids)
			slices.Sort(addrs)
			slices.Sort(viaLsof)
			if !slices.Equal(addrs, viaLsof) {
				t.Errorf("lsof finds %v, /proc %v", viaLsof, addrs)
			}
		}
	})

	t.Run("kubectl version shows v1.37.0", func(t *testing.T) {
		out := labcluster(t, "kubectl", "--kubeconfig", filepath.Join(dir, "kubeconfig"), "version")
		if !strings.Contains(out, "Client Version: v1.37.0") || !strings.Contains(out, "Server Version: v1.37.0") {
			t.Errorf("kubectl version:\n%s", out)
		}
	})

	t.Run("a deployment gets Running pods", func(t *testing.T) {
		c, err := Connect(filepath.Join(dir, "kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		labels := map[string]string{"app": "web"}
		_, err = c.Client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(2)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var running int
		err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, nil // the apiserver may be busy; ask again
			}
			running = 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == "lab-node" {
					running++
				}
			}
			return running == 2, nil
		})
		if err != nil {
			t.Fatalf("%d of 2 pods Running on lab-node when the deadline passed", running)
		}
	})

	t.Run("down leaves no process", func(t *testing.T) {
		out := labcluster(t, "down", "--dir", dir)
		stopped = true
		if !strings.Contains(out, "stopped") {
			t.Errorf("down: %s", out)
		}
		waitGone(t, pids)
		if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); !os.IsNotExist(err) {
			t.Errorf("kubeconfig left after down: %v", err)
		}
	})
}

// TestKilledSupervisorTakesComponents: a test binary killed with SIGKILL must
// not leave a cluster behind. StartEmbedded's supervisor is our child; kill it
// the same way and its etcd and apiserver must go too.
func TestKilledSupervisorTakesComponents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel() // a cluster of its own, in its own directory, on free ports
	c, err := StartEmbedded(t.TempDir(), "etcd", "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	supervisor := c.process.Process.Pid
	components := childrenOf(supervisor)
	if len(components) != 2 {
		t.Fatalf("want etcd and apiserver, got pids %v", components)
	}
	c.process.Process.Kill()
	c.process.Wait()
	c.process = nil
	waitGone(t, components)
}

// childrenOf lists the processes whose parent is pid, from ps(1), which
// prints them the same way on Linux and macOS.
func childrenOf(pid int) []int {
	out, err := exec.Command("ps", "-A", "-o", "pid=", "-o", "ppid=").Output()
	if err != nil {
		return nil
	}
	var children []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[1] == strconv.Itoa(pid) {
			if child, err := strconv.Atoi(f[0]); err == nil {
				children = append(children, child)
			}
		}
	}
	return children
}

// listeners returns the local addresses of the TCP sockets in LISTEN state
// that the given processes hold: read from /proc on Linux, asked of lsof(8)
// elsewhere (macOS ships it).
func listeners(t *testing.T, pids []int) []string {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		return listenersLsof(t, pids)
	}
	inodes := map[string]bool{}
	for _, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
			}
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st ... inode (field 9); st 0A is LISTEN.
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			addrs = append(addrs, decodeProcAddr(f[1]))
		}
	}
	return addrs
}

// listenersLsof is listeners by lsof: "-a -p PIDS -iTCP -sTCP:LISTEN" lists
// the listening sockets of those processes, NAME last ("127.0.0.1:8080
// (LISTEN)").
func listenersLsof(t *testing.T, pids []int) []string {
	t.Helper()
	if _, err := exec.LookPath("lsof"); err != nil {
		t.Skip("neither /proc nor lsof to list listening sockets")
	}
	var ps []string
	for _, pid := range pids {
		ps = append(ps, strconv.Itoa(pid))
	}
	out, _ := exec.Command("lsof", "-nP", "-a", "-p", strings.Join(ps, ","), "-iTCP", "-sTCP:LISTEN").Output()
	var addrs []string
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 2 && f[len(f)-1] == "(LISTEN)" {
			addrs = append(addrs, f[len(f)-2])
		}
	}
	return addrs
}

// decodeProcAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080"
// (IPv4 bytes are little-endian there); IPv6 addresses are shown raw.
func decodeProcAddr(s string) string {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	if len(hexIP) != 8 {
		return fmt.Sprintf("[%s]:%d", hexIP, port)
	}
	ip, _ := strconv.ParseUint(hexIP, 16, 32)
	return fmt.Sprintf("%d.%d.%d.%d:%d", ip&0xff, ip>>8&0xff, ip>>16&0xff, ip>>24, port)
}

func waitGone(t *testing.T, pids []int) {
	t.Helper()
	var alive []int
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		alive = alive[:0]
		for _, pid := range pids {
			// Signal 0 probes; a zombie still answers, so check its state too.
			if syscall.Kill(pid, 0) == nil && !isZombie(pid) {
				alive = append(alive, pid)
			}
		}
		return len(alive) == 0, nil
	})
	if err != nil {
		t.Fatalf("processes still running: %v", alive)
	}
}

// isZombie tells whether pid has exited but not been reaped (ps state Z),
// or is gone.
func isZombie(pid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return true // ps found no such process
	}
	return strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}

// TestOneSupervisorPerDir: a second supervisor in the same directory (two
// `up`s at once) must refuse, not wipe the running cluster's files.
func TestOneSupervisorPerDir(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel() // a cluster of its own, in its own directory, on free ports
	dir := t.TempDir()
	c, err := StartEmbedded(dir, "etcd", "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	_, err = StartEmbedded(dir, "etcd", "apiserver")
	if err == nil || !strings.Contains(err.Error(), "another labcluster supervisor is running in "+dir) {
		t.Fatalf("second supervisor: got %v, want a refusal", err)
	}
	// The first cluster is untouched: its kubeconfig still works.
	if _, err := Connect(filepath.Join(dir, "kubeconfig")); err != nil {
		t.Fatalf("the first cluster broke: %v", err)
	}
}

// TestInterruptedUpStopsTheCluster: Ctrl-C during `labcluster up` (what
// scripts/cluster-up.sh runs) does not leave the cluster starting on its
// own in the background: up says it is stopping it, stops it once it is
// up, and exits 130; no process of it and no state file remain.
func TestInterruptedUpStopsTheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel() // a cluster of its own, in its own directory, on free ports
	bin, err := LabclusterBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "up", "--dir", dir, "--components", "etcd,apiserver")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground group
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer labcluster(t, "down", "--dir", dir) // in case the test fails
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return strings.Contains(out.String(), "labcluster: starting"), nil
	})
	if err != nil {
		t.Fatalf("up never said it was starting:\n%s", out.String())
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // Ctrl-C
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("up still runs a minute after Ctrl-C:\n%s", out.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130\n%s", err, out.String())
	}
	for _, want := range []string{"labcluster: interrupted: stopping the cluster as soon as it has started", "labcluster: stopped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "ready in") {
		t.Errorf("up reported the cluster ready after Ctrl-C:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); !os.IsNotExist(err) {
		t.Errorf("state.json is still there: %v", err)
	}
	noProcessNames(t, dir)
}

// TestEtcdMembers: `up --etcd-members 3` runs three etcd members, each its
// own process; with the leader killed (SIGKILL), the other two elect a new
// one and the API serves writes again; `etcd start` brings the member back.
// A second `up` asking for another member count is refused, as is a count
// that is not 1, 3 or 5.
func TestEtcdMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel() // a cluster of its own, in its own directory, on free ports
	dir := t.TempDir()
	out := labcluster(t, "up", "--dir", dir, "--components", "etcd,apiserver", "--etcd-members", "3")
	if !strings.Contains(out, "(etcd: 3 members)") || !strings.Contains(out, "etcd listening: 3 members") {
		t.Fatalf("up: %s", out)
	}
	defer labcluster(t, "down", "--dir", dir)
	status := labcluster(t, "status", "--dir", dir)
	for _, m := range []string{"etcd-1", "etcd-2", "etcd-3"} {
		if !regexpMatch(`(?m)^`+m+` +running, pid \d+$`, status) {
			t.Errorf("status lacks %s running:\n%s", m, status)
		}
	}

	out = labcluster(t, "etcd", "kill", "leader", "--dir", dir)
	f := strings.Fields(out) // killed etcd member etcd-N (pid P)
	if len(f) < 4 || f[0] != "killed" || !strings.HasPrefix(f[3], "etcd-") {
		t.Fatalf("etcd kill leader: %q", out)
	}
	killed := f[3]
	c, err := Connect(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	// A write can fail while the two left elect a leader (about a second,
	// etcd's election timeout); then it must succeed.
	var lastErr error
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lastErr = c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-the-leader-died"}}, metav1.CreateOptions{})
		return lastErr == nil, nil
	})
	if err != nil {
		t.Fatalf("no write succeeded within 30s of the leader's death: %v", lastErr)
	}
	if status := labcluster(t, "status", "--dir", dir); !regexpMatch(`(?m)^`+killed+` +killed$`, status) {
		t.Errorf("status does not show %s killed:\n%s", killed, status)
	}
	if out := labcluster(t, "etcd", "start", "--dir", dir); !strings.HasPrefix(out, "started etcd member "+killed+" ") {
		t.Errorf("etcd start: %q", out)
	}
	if status := labcluster(t, "status", "--dir", dir); !regexpMatch(`(?m)^`+killed+` +running, pid \d+$`, status) {
		t.Errorf("status does not show %s running again:\n%s", killed, status)
	}

	bin, err := LabclusterBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"up", "--dir", dir, "--components", "etcd,apiserver"}, 1, "a cluster with 3 etcd member(s) is already up"},
		{[]string{"up", "--dir", t.TempDir(), "--etcd-members", "2"}, 2, "--etcd-members 2: want 1, 3 or 5"},
		{[]string{"etcd", "kill", "etcd-9", "--dir", dir}, 1, `no etcd member "etcd-9" (members: etcd-1, etcd-2, etcd-3)`},
		{[]string{"etcd", "kill", "--dir", dir}, 2, "name the member"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
			t.Errorf("labcluster %s: exit %d, %q; want exit %d and one line with %q", strings.Join(tc.args, " "), code, out, tc.code, tc.want)
		}
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
