package informer

// The format of the recorded fixtures in ../testdata/recorded: what a
// ListerWatcher handed to client-go's Reflector while it ran against a real
// apiserver (record_cluster_test.go writes them; replay_test.go serves them
// again to our informer and to client-go's). JSON lines, one thing a line,
// in the order it happened:
//
//	{"fixture": ..., "recorded": ..., "kubernetes": ..., ...}   the header, first line
//	{"note": "..."}                                             what the recorder did to the cluster
//	{"call": N, "verb": "LIST"|"WATCH", "options": {...}}       a call, with the options the Reflector sent
//	{"event": "ADDED", "object": {...}}                         a watch event the caller received
//	{"item": {...}}                                             an item of a LIST
//	{"end": "...", ...}                                         how the call ended
//
// The options leave out timeoutSeconds: both Reflectors draw it at random
// (5 to 10 minutes), so it cannot be compared.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// recordedDir holds the fixtures (the lab's testdata, one level up).
const recordedDir = "../testdata/recorded"

// How a call ended, as the "end" of its last line says.
const (
	endClosedByServer = "closed by the server"      // the result channel closed (the server's timeoutSeconds)
	endCut            = "cut by the recorder"       // the recorder closed it, as a dropped connection does
	endStopped        = "stopped by the client"     // the Reflector called Stop (after an ERROR event)
	endOpen           = "open when recording ended" // still streaming when the recording stopped
	endList           = "list"                      // a LIST that answered (resourceVersion, continue)
	endError          = "error"                     // the call itself failed (status, or error)
)

// errorConnectionRefused is what an "error" end says for a refused dial.
const errorConnectionRefused = "connection refused"

// fixtureLine is one line of a fixture; which fields are set says what it is.
type fixtureLine struct {
	// The header.
	Fixture       string   `json:"fixture,omitempty"`
	Recorded      string   `json:"recorded,omitempty"`
	Kubernetes    string   `json:"kubernetes,omitempty"`
	How           string   `json:"how,omitempty"`
	Rerecord      string   `json:"rerecord,omitempty"`
	Scenario      string   `json:"scenario,omitempty"`
	StreamingList *bool    `json:"streamingList,omitempty"`
	Contains      []string `json:"contains,omitempty"`

	Note string `json:"note,omitempty"`

	Call    int                 `json:"call,omitempty"`
	Verb    string              `json:"verb,omitempty"`
	Options *metav1.ListOptions `json:"options,omitempty"`

	Event  watch.EventType `json:"event,omitempty"`
	Object json.RawMessage `json:"object,omitempty"`
	Item   json.RawMessage `json:"item,omitempty"`

	End             string         `json:"end,omitempty"`
	AfterMs         *int64         `json:"afterMs,omitempty"`
	ResourceVersion string         `json:"resourceVersion,omitempty"`
	Continue        string         `json:"continue,omitempty"`
	Status          *metav1.Status `json:"status,omitempty"`
	Error           string         `json:"error,omitempty"`
}

// fixture is a parsed recording.
type fixture struct {
	name   string
	header fixtureLine
	calls  []*recordedCall
}

// recordedCall is one LIST or WATCH call and everything it answered.
type recordedCall struct {
	line    int // of the call, in the file
	verb    string
	options metav1.ListOptions
	events  []watch.Event      // WATCH
	items   []corev1.ConfigMap // LIST
	end     fixtureLine        // the end line
	after   time.Duration      // from the call to its end (WATCH)
	err     error              // end "error"
}

// callKey is what must match between a caller's call and the recorded one:
// the verb and the options, without timeoutSeconds.
func callKey(verb string, opts metav1.ListOptions) string {
	opts.TimeoutSeconds = nil
	b, _ := json.Marshal(opts)
	return verb + " " + string(b)
}

func (c *recordedCall) String() string { return callKey(c.verb, c.options) }

// readFixture parses a fixture file; a malformed one is an error naming
// the line.
func readFixture(path string) (*fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fx := &fixture{name: strings.TrimSuffix(filepath.Base(path), ".jsonl")}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	var cur *recordedCall
	for n := 1; sc.Scan(); n++ {
		var l fixtureLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, args...))
		}
		switch {
		case n == 1:
			if l.Fixture == "" {
				return nil, bad("the first line must be the header ({\"fixture\": ...})")
			}
			fx.header = l
		case l.Note != "":
		case l.Call != 0:
			if cur != nil {
				return nil, bad("call %d starts before call %d ended", l.Call, len(fx.calls))
			}
			if l.Call != len(fx.calls)+1 || (l.Verb != "LIST" && l.Verb != "WATCH") || l.Options == nil {
				return nil, bad("want call %d, verb LIST or WATCH, and options", len(fx.calls)+1)
			}
			cur = &recordedCall{line: n, verb: l.Verb, options: *l.Options}
			fx.calls = append(fx.calls, cur)
		case l.Event != "":
			if cur == nil || cur.verb != "WATCH" {
				return nil, bad("an event outside a WATCH")
			}
			var obj runtime.Object = &corev1.ConfigMap{}
			if l.Event == watch.Error {
				obj = &metav1.Status{}
			}
			if err := json.Unmarshal(l.Object, obj); err != nil {
				return nil, bad("event object: %v", err)
			}
			cur.events = append(cur.events, watch.Event{Type: l.Event, Object: obj})
		case l.Item != nil:
			if cur == nil || cur.verb != "LIST" {
				return nil, bad("an item outside a LIST")
			}
			var cm corev1.ConfigMap
			if err := json.Unmarshal(l.Item, &cm); err != nil {
				return nil, bad("item: %v", err)
			}
			cur.items = append(cur.items, cm)
		case l.End != "":
			if cur == nil {
				return nil, bad("an end outside a call")
			}
			switch l.End {
			case endClosedByServer, endCut, endStopped, endOpen:
				if cur.verb != "WATCH" || l.AfterMs == nil {
					return nil, bad("end %q is for a WATCH, with afterMs", l.End)
				}
				cur.after = time.Duration(*l.AfterMs) * time.Millisecond
			case endList:
				if cur.verb != "LIST" {
					return nil, bad("end %q is for a LIST", l.End)
				}
			case endError:
				switch {
				case l.Status != nil:
					cur.err = &apierrors.StatusError{ErrStatus: *l.Status}
				case l.Error == errorConnectionRefused:
					cur.err = errConnectionRefused
				case l.Error != "":
					cur.err = errors.New(l.Error)
				default:
					return nil, bad("end %q needs a status or an error", l.End)
				}
			default:
				return nil, bad("unknown end %q", l.End)
			}
			cur.end = l
			cur = nil
		default:
			return nil, bad("a line that is neither header, note, call, event, item nor end")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: call %d has no end line", path, len(fx.calls))
	}
	if len(fx.calls) == 0 {
		return nil, fmt.Errorf("%s: no calls", path)
	}
	return fx, nil
}

// What a fixture's header may claim it contains; checkClaims verifies
// each against the calls, so a recording that lost what it was made to
// show fails instead of passing with nothing to compare.
var fixtureClaims = map[string]func(fx *fixture) bool{
	"streaming list": func(fx *fixture) bool {
		return fx.anyEvent(func(ev watch.Event) bool { return isInitialEventsEnd(ev) })
	},
	"LIST": func(fx *fixture) bool {
		return fx.anyCall(func(c *recordedCall) bool { return c.verb == "LIST" && c.end.End == endList })
	},
	"bookmark": func(fx *fixture) bool {
		return fx.anyEvent(func(ev watch.Event) bool { return ev.Type == watch.Bookmark && !isInitialEventsEnd(ev) })
	},
	"watch closed by the server": func(fx *fixture) bool {
		return fx.anyCall(func(c *recordedCall) bool { return c.end.End == endClosedByServer })
	},
	"watch cut": func(fx *fixture) bool {
		return fx.anyCall(func(c *recordedCall) bool { return c.end.End == endCut })
	},
	"rewatch from a resourceVersion": func(fx *fixture) bool {
		return fx.anyCall(func(c *recordedCall) bool {
			return c.verb == "WATCH" && c.options.SendInitialEvents == nil && c.options.ResourceVersion != "" && c.options.ResourceVersion != "0"
		})
	},
	"410 Expired": func(fx *fixture) bool {
		return fx.anyEvent(func(ev watch.Event) bool {
			s, ok := ev.Object.(*metav1.Status)
			return ev.Type == watch.Error && ok && s.Code == 410 && s.Reason == metav1.StatusReasonExpired
		})
	},
	"relist": func(fx *fixture) bool {
		lists := 0
		for _, c := range fx.calls {
			if c.verb == "LIST" || (c.options.SendInitialEvents != nil && *c.options.SendInitialEvents) {
				lists++
			}
		}
		return lists >= 2
	},
	"call error": func(fx *fixture) bool {
		return fx.anyCall(func(c *recordedCall) bool { return c.err != nil })
	},
	"DELETED": func(fx *fixture) bool {
		return fx.anyEvent(func(ev watch.Event) bool { return ev.Type == watch.Deleted })
	},
}

// handlerClaims are claims about what the handlers get, which
// TestDifferentialRecorded checks on their calls.
var handlerClaims = map[string]bool{
	"final state unknown":    true, // some OnDelete carries DeletedFinalStateUnknown
	"no final state unknown": true, // every delete is a real one
}

func (fx *fixture) anyCall(f func(*recordedCall) bool) bool {
	for _, c := range fx.calls {
		if f(c) {
			return true
		}
	}
	return false
}

func (fx *fixture) anyEvent(f func(watch.Event) bool) bool {
	return fx.anyCall(func(c *recordedCall) bool {
		for _, ev := range c.events {
			if f(ev) {
				return true
			}
		}
		return false
	})
}

func isInitialEventsEnd(ev watch.Event) bool {
	m, ok := ev.Object.(metav1.Object)
	return ev.Type == watch.Bookmark && ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// checkClaims returns what the header claims and the calls do not show.
func checkClaims(fx *fixture) []string {
	var missing []string
	for _, c := range fx.header.Contains {
		if handlerClaims[c] {
			continue // checked on the handler calls, by the replay
		}
		check, ok := fixtureClaims[c]
		if !ok {
			missing = append(missing, fmt.Sprintf("%q (not a claim this test knows)", c))
			continue
		}
		if !check(fx) {
			missing = append(missing, fmt.Sprintf("%q", c))
		}
	}
	return missing
}
