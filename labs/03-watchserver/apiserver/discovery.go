// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/discovery (legacy.go:
// /api; group.go, root.go: /apis; version.go: /api/v1) and
// pkg/endpoints/discovery/aggregated (the v2 document kubectl asks for first).
//
// kubectl and client-go find out which resources exist before they do
// anything: /api lists the core versions, /api/v1 the resources in it (with
// their verbs and short names: that is how `kubectl get cm` knows "cm"), and
// /apis the named groups, of which we have none. Clients first ask for the
// aggregated v2 document; answering with plain JSON makes them fall back to
// these legacy documents, which is all we serve.
//
// OpenAPI (upstream: k8s.io/kube-openapi handler3, served at /openapi/v3):
// kubectl create -f and replace -f validate a file before sending it. If the
// server's OpenAPI says that PATCH of the kind takes the fieldValidation
// query parameter, kubectl lets the server validate (?fieldValidation=Strict)
// and needs no schema. So we publish exactly that one fact, not the schemas:
// kubectl explain, which needs them, does not work here.

package apiserver

import (
	"net/http"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

func (s *server) apiVersions(w http.ResponseWriter, req *http.Request) {
	writeObject(w, req, http.StatusOK, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: s.address},
		},
	})
}

func (s *server) apiResources(w http.ResponseWriter, req *http.Request) {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList"}, GroupVersion: "v1"}
	for _, r := range s.resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         r.GroupResource.Resource,
			SingularName: r.SingularName,
			Namespaced:   true,
			Kind:         r.Kind,
			Verbs:        metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"},
			ShortNames:   r.ShortNames,
		})
	}
	writeObject(w, req, http.StatusOK, list)
}

func (s *server) apiGroups(w http.ResponseWriter, req *http.Request) {
	writeObject(w, req, http.StatusOK, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   []metav1.APIGroup{},
	})
}

// openAPIRoot lists the group versions that have an OpenAPI v3 document.
func (s *server) openAPIRoot(w http.ResponseWriter, req *http.Request) {
	writeAny(w, req, map[string]any{
		"paths": map[string]any{"api/v1": map[string]string{"serverRelativeURL": "/openapi/v3/api/v1?hash=lab03"}},
	})
}

// openAPICoreV1 is a minimal OpenAPI v3 document for the core group: the
// PATCH operation of each resource and its fieldValidation parameter.
func (s *server) openAPICoreV1(w http.ResponseWriter, req *http.Request) {
	paths := map[string]any{}
	for _, r := range s.resources {
		patch := map[string]any{
			"operationId":                     "patchCoreV1Namespaced" + r.Kind,
			"x-kubernetes-action":             "patch",
			"x-kubernetes-group-version-kind": map[string]string{"group": "", "version": "v1", "kind": r.Kind},
			"parameters": []map[string]any{{
				"name": "fieldValidation", "in": "query", "schema": map[string]string{"type": "string"},
				"description": "Strict (reject unknown fields), Warn (accept, with a Warning header) or Ignore.",
			}},
			"responses": map[string]any{"200": map[string]string{"description": "OK"}},
		}
		paths["/api/v1/namespaces/{namespace}/"+r.GroupResource.Resource+"/{name}"] = map[string]any{"patch": patch}
	}
	writeAny(w, req, map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]string{"title": "listwatch-labs watchserver", "version": "v1.37.0"},
		"paths":   paths,
	})
}

// version answers /version with the Kubernetes version whose behaviour we
// reproduce, so `kubectl version` shows no skew warning.
func (s *server) version(w http.ResponseWriter, req *http.Request) {
	writeAny(w, req, &version.Info{
		Major: "1", Minor: "37", GitVersion: "v1.37.0", GitTreeState: "clean",
		GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	})
}
