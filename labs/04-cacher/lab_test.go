// The lab's scenarios: testscript scripts (testdata/script) against the
// miniapiserver, the labkit target "mini" (lab 03's API server over this
// lab's Cacher over an embedded etcd, one per script); and lab 03's and lab
// 01's scenarios run again against it, with their own golden transcripts.
//
// The target and the `mini` command (the lab's tool for what kube-apiserver
// does not let a client do: compact etcd now, restart the server on the
// same etcd directory, read a few lines of /metrics, wait for a metric, and
// play a watcher that never reads) are package minitarget's, which other
// labs' tests import too.
package lab_test

import (
	"flag"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/miniapiservercmd"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/minitarget"
)

func TestMain(m *testing.M) {
	// The scripts and tests here spend their time waiting on servers, not
	// computing: a watch held open to its timeout for the bookmark due 2 s
	// before it, a restart, kube-apiserver's Cacher noticing a compaction.
	// Each runs in its own namespace, most on a miniapiserver of its own, so
	// they run at once (t.Parallel), and more of them than -parallel's
	// default (GOMAXPROCS, 2 on a small machine) would let: the waits
	// overlap. A -parallel given on the command line still wins.
	if err := flag.Set("test.parallel", "16"); err != nil {
		panic(err)
	}
	labkit.Main(m, map[string]labkit.Program{
		"miniapiserver": miniapiservercmd.Main,
		"informer":      labkit.ClientGoInformer,
	})
}

// TestScripts runs this lab's scenarios on the miniapiserver.
func TestScripts(t *testing.T) {
	t.Parallel()
	// In exercise mode one-etcd-watch and node-trigger fail until
	// cache-watcher-convert and trigger-values are written: exercises.json
	// lists them, and RunScripts names those exercises when they fail.
	labkit.RunScripts(t, "testdata/script", labkit.Options{
		Targets: map[string]labkit.StartTarget{minitarget.Name: minitarget.Start},
		RunOn:   []string{minitarget.Name},
		Cmds:    map[string]func(ts *testscript.TestScript, neg bool, args []string){"mini": minitarget.Cmd},
	})
}

// TestLab03ScriptsOnMini runs lab 03's scenarios, unchanged but for their
// [target:mini] lines, against the miniapiserver: lab 03's API server over
// an in-memory storage and over this Cacher over etcd must give the same
// transcripts. Lab 03's `watchserver` program is not registered here (it
// lives in lab 03's internal package): the one script that runs it skips
// itself on mini. `informer` is labkit.ClientGoInformer, as in lab 03.
func TestLab03ScriptsOnMini(t *testing.T) {
	t.Parallel()
	labkit.RunScripts(t, "../03-watchserver/testdata/script", labkit.Options{
		Targets: map[string]labkit.StartTarget{minitarget.Name: minitarget.Start},
		RunOn:   []string{minitarget.Name},
	})
}

// TestLab01ScriptsOnMini runs lab 01's scenarios against the miniapiserver.
// Those that need a labcluster (restart, compaction) or what the
// miniapiserver does not serve skip themselves with a condition.
func TestLab01ScriptsOnMini(t *testing.T) {
	t.Parallel()
	// chunked needs lab 03's flush-when-idle (exercises.json: "03/flush-when-idle"):
	// the miniapiserver serves through lab 03's WatchServer, and -tags
	// exercise builds its stub too.
	labkit.RunScripts(t, "../01-watch-curl/testdata/script", labkit.Options{
		Targets: map[string]labkit.StartTarget{minitarget.Name: minitarget.Start},
		RunOn:   []string{minitarget.Name},
	})
}
