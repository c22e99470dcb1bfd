package lab_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
)

// TestNoPreTimeoutBookmarkUnderTwoSecondsBothServers: the Cacher schedules
// a watcher's pre-timeout bookmark 2 s before its deadline and none at all
// when that moment has already passed (cache_watcher.go, nextBookmarkTime).
// A watch with timeoutSeconds=1 that allows bookmarks, and whose selector
// hides a change made after its resourceVersion, ends with an empty body on
// both servers; the bookmarks scenario shows the bookmark with
// timeoutSeconds=6. (memstorage's TestNoPreTimeoutBookmarkUnderTwoSeconds
// checks ours in fake time.)
func TestNoPreTimeoutBookmarkUnderTwoSecondsBothServers(t *testing.T) {
	t.Parallel()
	cluster := labkit.Current()
	lab, labCfg := startLabServer(t, apiserver.Config{})
	ns := fmt.Sprintf("bm-%d", time.Now().UnixNano())
	if _, err := cluster.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cluster.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})

	targets := []struct {
		name   string
		server string
		config *rest.Config
	}{
		{"real", cluster.Server, cluster.Config},
		{"lab", lab.URL, labCfg},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Both watches start before either is read: their 1 s timeouts run
	// together.
	var watches []*http.Response
	for _, target := range targets {
		cms := kubernetes.NewForConfigOrDie(target.config).CoreV1().ConfigMaps(ns)
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		httpClient, err := rest.HTTPClientFor(target.config)
		if err != nil {
			t.Fatal(err)
		}
		url := target.server + "/api/v1/namespaces/" + ns + "/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=1&labelSelector=app%3Dnone&resourceVersion=" + list.ResourceVersion
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		// A change the watch does not see: a bookmark would report it.
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hidden"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		watches = append(watches, resp)
	}
	for i, target := range targets {
		resp := watches[i]
		body, err := io.ReadAll(resp.Body) // ends at the 1 s timeout
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d, %v", target.name, resp.StatusCode, err)
		}
		if strings.TrimSpace(string(body)) != "" {
			t.Errorf("%s server: body %q, want none: no pre-timeout bookmark for a watch shorter than 2 s", target.name, body)
		}
	}
}
