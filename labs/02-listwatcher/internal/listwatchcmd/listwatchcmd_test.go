package listwatchcmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
)

// TestPrintText pins the text the README shows, one line per step.
func TestPrintText(t *testing.T) {
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv},
		}
	}
	list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.ConfigMap{*cm("a", "5")}}
	bookmark := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12", Annotations: map[string]string{"k8s.io/initial-events-end": "true"}}}
	gone := apierrors.NewResourceExpired("too old resource version: 12 (20)")
	steps := []listwatcher.Step{
		{Op: listwatcher.StepList, ResourceVersion: "10", List: list},
		{Op: listwatcher.StepWatch, ResourceVersion: "10"},
		{Op: listwatcher.StepEvent, Event: watch.Event{Type: watch.Added, Object: cm("b", "11")}},
		{Op: listwatcher.StepEvent, Event: watch.Event{Type: watch.Bookmark, Object: bookmark}},
		{Op: listwatcher.StepWatchEnd, ResourceVersion: "12"},
		{Op: listwatcher.StepEvent, Event: watch.Event{Type: watch.Error, Object: &gone.ErrStatus}},
		{Op: listwatcher.StepRelist, Err: gone},
		{Op: listwatcher.StepBackoff, Delay: 1234567 * time.Microsecond, Err: errors.New("connection refused")},
	}
	var out bytes.Buffer
	for _, s := range steps {
		printText(&out, s)
	}
	want := `LIST ConfigMapList rv=10 items=1
  ITEM default/a rv=5
WATCH from rv=10
ADDED ConfigMap default/b rv=11
BOOKMARK rv=12 k8s.io/initial-events-end=true
WATCH-END the stream ended (timeout, or a broken connection); resume from rv=12
ERROR too old resource version: 12 (20)
RELIST too old resource version: 12 (20)
BACKOFF 1.235s: connection refused
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestPrintJSON: the loop's own steps carry the Status code and reason, which
// the lab's `steps` script command reads.
func TestPrintJSON(t *testing.T) {
	var out bytes.Buffer
	printJSON(&out, listwatcher.Step{Op: listwatcher.StepRelist, Err: apierrors.NewResourceExpired("too old")})
	want := `{"code":410,"error":"too old","reason":"Expired","resourceVersion":"","step":"RELIST"}` + "\n"
	if out.String() != want {
		t.Fatalf("got %s want %s", out.String(), want)
	}
}

// TestUsage: bad usage is exit code 2 and one line on stderr, before any
// kubeconfig is read; nothing on stdout.
func TestUsage(t *testing.T) {
	for args, want := range map[string]string{
		"-o yaml":        `listwatch: -o "yaml": want text or json`,
		"-nosuchflag":    "flag provided but not defined: -nosuchflag",
		"-n x configmap": `listwatch: unexpected argument "configmap"`,
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(strings.Fields(args), &stdout, &stderr); code != 2 {
			t.Errorf("Main(%s) = %d, want 2", args, code)
		}
		if stdout.Len() != 0 || !strings.Contains(stderr.String(), want) {
			t.Errorf("Main(%s): stdout %q, stderr %q, want %q", args, stdout.String(), stderr.String(), want)
		}
	}
}
