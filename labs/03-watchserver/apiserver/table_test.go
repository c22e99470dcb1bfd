package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// TestTablesForKubectl: LIST and WATCH answer kubectl's Table request with
// the Name, Data, Age columns; a watch sends the headers once.
func TestTablesForKubectl(t *testing.T) {
	in, restCfg, _ := startInstance(t, Config{})
	client, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	get := func(query string) *http.Response {
		req, _ := http.NewRequest("GET", in.URL+"/api/v1/namespaces/ns/configmaps"+query, nil)
		req.Header.Set("Accept", tableAccept)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	cms := kubernetes.NewForConfigOrDie(restCfg).CoreV1().ConfigMaps("ns")
	ctx := context.Background()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	resp := get("")
	var table metav1.Table
	json.NewDecoder(resp.Body).Decode(&table)
	resp.Body.Close()
	if table.Kind != "Table" || len(table.ColumnDefinitions) != 3 || len(table.Rows) != 1 || table.Rows[0].Cells[0] != "a" || table.ResourceVersion != "2" {
		t.Fatalf("LIST as Table: %+v", table)
	}
	var row metav1.PartialObjectMetadata
	if err := json.Unmarshal(table.Rows[0].Object.Raw, &row); err != nil || row.Kind != "PartialObjectMetadata" || row.Namespace != "ns" {
		t.Fatalf("row object %s: want PartialObjectMetadata (includeObject defaults to Metadata)", table.Rows[0].Object.Raw)
	}

	resp = get("?watch=1&resourceVersion=2&timeoutSeconds=1")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	for i, wantHeaders := range []bool{true, false} {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Type   string       `json:"type"`
			Object metav1.Table `json:"object"`
		}
		if err := json.Unmarshal(line, &ev); err != nil || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 {
			t.Fatalf("event %d: %s", i, line)
		}
		if got := len(ev.Object.ColumnDefinitions) > 0; got != wantHeaders {
			t.Fatalf("event %d has column definitions: %v, want %v (headers only on the first)", i, got, wantHeaders)
		}
	}
	resp.Body.Close() // the rest of the watch (its 1 s timeout) is not needed

	resp = get("?includeObject=Everything")
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad includeObject: HTTP %d, want 400", resp.StatusCode)
	}
}
