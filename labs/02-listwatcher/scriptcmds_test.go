package lab02_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
)

// scriptCommands are this lab's testscript commands, on top of labkit's.
func scriptCommands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"steps":  cmdSteps,
		"lwlist": cmdLWList,
	}
}

// steps [-any-end] [-no-trailing-bookmark] [-f FIELD]... FILE: print the
// transcript of `listwatch -o json` output: labkit's transcript for the LISTs
// and events, and one line per step of the loop (WATCH, WATCH-END, RELIST,
// BACKOFF). With -any-end, a watch that broke and one the server closed both
// show as "WATCH-END" (410 still shows): for an apiserver going down, which
// of the two happens is timing, and the loop does the same after either.
// With -no-trailing-bookmark, plain BOOKMARKs after the last other line are
// left out: the apiserver sends a watcher a bookmark on its own timer (about
// once a minute), and one can land between the script's last event and its
// `kill`.
func cmdSteps(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! steps")
	}
	var fields []string
	anyEnd, noTrailing := false, false
	for len(args) >= 1 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "-any-end":
			anyEnd, args = true, args[1:]
		case args[0] == "-no-trailing-bookmark":
			noTrailing, args = true, args[1:]
		case args[0] == "-f" && len(args) >= 2:
			fields, args = append(fields, args[1]), args[2:]
		default:
			ts.Fatalf("usage: steps [-any-end] [-no-trailing-bookmark] [-f FIELD]... FILE")
		}
	}
	if len(args) != 1 {
		ts.Fatalf("usage: steps [-any-end] [-no-trailing-bookmark] [-f FIELD]... FILE")
	}
	out, err := renderSteps([]byte(ts.ReadFile(args[0])), fields, anyEnd)
	ts.Check(err)
	if noTrailing {
		lines := strings.SplitAfter(out, "\n")
		for len(lines) > 0 && (lines[len(lines)-1] == "" ||
			strings.HasPrefix(lines[len(lines)-1], "BOOKMARK ") && !strings.Contains(lines[len(lines)-1], "initial-events-end")) {
			lines = lines[:len(lines)-1]
		}
		out = strings.Join(lines, "")
	}
	fmt.Fprint(ts.Stdout(), out)
}

// renderSteps makes the loop's output the same on every run. What varies
// from run to run is timing: how many times a watch timed out while nothing
// happened, how many backoffs an outage took, whether the connection was
// reset or closed cleanly. So:
//   - a step line already printed since the last event is not printed again;
//   - BACKOFF and a broken stream show no error text;
//   - WATCH says where its resourceVersion came from (the LIST, an event,
//     a BOOKMARK), never the number;
//   - the same line twice in a row is printed once (two bookmarks at one
//     point of the transcript).
//
// Lines are kept unrendered until every frame is in: the transcript's rvN
// labels rank all the resourceVersions it holds (labkit/README.md).
func renderSteps(data []byte, fields []string, anyEnd bool) (string, error) {
	tr := labkit.NewTranscript(fields...)
	var out []string
	stepsSeen := map[string]bool{}
	origin := map[string]string{} // resourceVersion -> what gave it to us
	var newestObject uint64
	print := func(line string) { out = append(out, line) }
	step := func(line string) {
		if !stepsSeen[line] {
			stepsSeen[line] = true
			print(line)
		}
	}
	for _, raw := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if raw == "" {
			continue
		}
		var rec struct {
			Step            string `json:"step"`
			ResourceVersion string `json:"resourceVersion"`
			Error           string `json:"error"`
			Code            int    `json:"code"`
			Reason          string `json:"reason"`
			Kind            string `json:"kind"`
			Type            string `json:"type"`
			Metadata        struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Object struct {
				Metadata struct {
					Name            string            `json:"name"`
					ResourceVersion string            `json:"resourceVersion"`
					Annotations     map[string]string `json:"annotations"`
				} `json:"metadata"`
				Details struct {
					Causes []cause `json:"causes"`
				} `json:"details"`
			} `json:"object"`
		}
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return "", fmt.Errorf("steps: %v in %q", err, raw)
		}
		switch rec.Step {
		case "WATCH":
			from := origin[rec.ResourceVersion]
			if rec.ResourceVersion == "" {
				from = "nothing: a streaming list (sendInitialEvents=true)"
			}
			step("WATCH from " + from)
		case "WATCH-END":
			switch {
			case rec.Code == 410:
				step(fmt.Sprintf("WATCH-END %d %s", rec.Code, rec.Reason))
			case anyEnd:
				step("WATCH-END")
			case rec.Error != "":
				step("WATCH-END broken")
			default:
				// The server's timeout, or a connection that broke: as
				// upstream's StreamWatcher, ours ends both silently.
				step("WATCH-END stream ended")
			}
		case "RELIST":
			step(fmt.Sprintf("RELIST because %d %s", rec.Code, rec.Reason))
		case "BACKOFF":
			step("BACKOFF")
		case "":
			// A stream we could not decode is not a server event: the
			// WATCH-END that follows says so.
			if rec.Type == "ERROR" && slices.ContainsFunc(rec.Object.Details.Causes, func(c cause) bool { return c.Type == "ClientWatchDecoding" }) {
				continue
			}
			before := tr.Len()
			if err := tr.Add([]byte(raw)); err != nil {
				return "", err
			}
			lines := tr.Pending(before)
			for _, l := range lines {
				print(l)
			}
			stepsSeen = map[string]bool{}
			switch {
			case rec.Kind != "": // a List
				origin[rec.Metadata.ResourceVersion] = "the LIST"
			case rec.Type == "BOOKMARK":
				rv := rec.Object.Metadata.ResourceVersion
				n, _ := strconv.ParseUint(rv, 10, 64)
				switch {
				case rec.Object.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true":
					origin[rv] = "the initial-events-end BOOKMARK"
				case n > newestObject:
					origin[rv] = "a BOOKMARK, ahead of the last event"
				default:
					origin[rv] = "a BOOKMARK"
				}
			case rec.Type != "ERROR" && len(lines) > 0:
				rv := rec.Object.Metadata.ResourceVersion
				n, _ := strconv.ParseUint(rv, 10, 64)
				newestObject = max(newestObject, n)
				f := strings.Fields(lines[0]) // "MODIFIED ConfigMap a rv3 ..."
				origin[rv] = "the " + strings.Join(f[:min(4, len(f))], " ")
			}
		default:
			return "", fmt.Errorf("steps: unknown step %q", rec.Step)
		}
	}
	var rendered []string
	for _, line := range out {
		line = tr.Render(line)
		if len(rendered) == 0 || rendered[len(rendered)-1] != line {
			rendered = append(rendered, line)
		}
	}
	return strings.Join(rendered, "\n") + "\n", nil
}

// cause is a StatusCause as JSON: its type is written as "reason".
type cause struct {
	Type string `json:"reason"`
}

// scriptListWatch is a ListWatch on RESOURCE in the script's $NS, through
// the script's $KUBECONFIG (which privatecluster may have changed).
func scriptListWatch(ts *testscript.TestScript, resource string) *listwatcher.ListWatch {
	cfg, err := clientcmd.BuildConfigFromFlags("", ts.Getenv("KUBECONFIG"))
	ts.Check(err)
	lw, err := listwatcher.New(cfg, resource, ts.Getenv("NS"))
	ts.Check(err)
	return lw
}

// lwlist [-limit N] [-rv RV] [-match Exact|NotOlderThan] [-l SEL] [-f FIELD]
// [-pages N] [-continue TOKEN -first-rv RV] RESOURCE: list page by page with our List and
// print the transcript of every page, preceded by a PAGE line. With -pages N
// it stops after N pages and sets $CONTINUE to the next page's token and
// $FIRST_RV to page 1's resourceVersion (pass it back with -first-rv).
func cmdLWList(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("lwlist", flag.ContinueOnError)
	limit := fs.Int64("limit", 0, "page size")
	rv := fs.String("rv", "", "resourceVersion")
	match := fs.String("match", "", "resourceVersionMatch")
	selector := fs.String("l", "", "label selector")
	pages := fs.Int("pages", 0, "stop after this many pages, setting $CONTINUE")
	cont := fs.String("continue", "", "continue token of the page to start at")
	firstPageRV := fs.String("first-rv", "", "resourceVersion of page 1, when starting at a later page")
	var fields stringList
	fs.Var(&fields, "f", "field to show")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		ts.Fatalf("usage: lwlist [-limit N] [-rv RV] [-match M] [-l SEL] [-f FIELD]... RESOURCE")
	}
	lw := scriptListWatch(ts, fs.Arg(0))
	lw.LabelSelector = *selector
	tr := labkit.NewTranscript(fields...)
	opts := metav1.ListOptions{Limit: *limit, ResourceVersion: *rv, ResourceVersionMatch: metav1.ResourceVersionMatch(*match), Continue: *cont}
	firstRV := *firstPageRV
	page := 1
	if *cont != "" {
		page = 2 // at least: we start after page 1
	}
	for ; ; page++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		list, err := lw.ListWithContext(ctx, opts)
		cancel()
		if err != nil {
			// A refused LIST prints the transcript of the apiserver's Status.
			var status apierrors.APIStatus
			if neg && errors.As(err, &status) {
				st := status.Status()
				st.Kind, st.APIVersion = "Status", "v1"
				body, _ := json.Marshal(st)
				ts.Check(tr.Add(body))
				fmt.Fprint(ts.Stdout(), tr.String())
				return
			}
			ts.Fatalf("lwlist: %v", err)
		}
		body, err := json.Marshal(list)
		ts.Check(err)
		var meta struct {
			Metadata struct{ Continue, ResourceVersion string } `json:"metadata"`
		}
		ts.Check(json.Unmarshal(body, &meta))
		// The transcript shows a list's resourceVersion relative to the
		// objects seen so far; whether all pages share one is said here.
		if page == 1 {
			firstRV = meta.Metadata.ResourceVersion
		}
		same := ""
		switch {
		case page == 1:
		case meta.Metadata.ResourceVersion == firstRV:
			same = " at the resourceVersion of page 1"
		default:
			same = " at a NEW resourceVersion"
		}
		tr.Note(fmt.Sprintf("PAGE %d more=%v%s", page, meta.Metadata.Continue != "", same))
		ts.Check(tr.Add(body))
		if meta.Metadata.Continue == "" {
			break
		}
		if page == *pages {
			ts.Setenv("CONTINUE", meta.Metadata.Continue)
			ts.Setenv("FIRST_RV", firstRV)
			break
		}
		opts = metav1.ListOptions{Limit: *limit, Continue: meta.Metadata.Continue}
	}
	fmt.Fprint(ts.Stdout(), tr.String())
	if neg {
		ts.Fatalf("lwlist: unexpected success")
	}
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
