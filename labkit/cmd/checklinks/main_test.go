package main

import "testing"

// TestFindReadsModulesByTheirWholeName: a citation is read by the module's
// whole name: kind's sigs.k8s.io modules are checked as themselves, and a
// k8s.io that ends a longer host (an image of registry.k8s.io) is no
// citation at all.
func TestFindReadsModulesByTheirWholeName(t *testing.T) {
	for _, c := range []struct {
		line           string
		module, path   string
		from, to, refs int
	}{
		{"`Provision` (sigs.k8s.io/kind@v0.33.0/pkg/cluster/internal/create/create.go:102-142)", "sigs.k8s.io/kind", "pkg/cluster/internal/create/create.go", 102, 142, 1},
		{"`Anonymous`, k8s.io/apiserver@v0.36.4/pkg/authentication/user/user.go:77", "k8s.io/apiserver", "pkg/authentication/user/user.go", 77, 77, 1},
		{"the image registry.k8s.io/pause@v3.10.2/pause is no module", "", "", 0, 0, 0},
		{"`defaultBookmarkFrequency` in https://github.com/kubernetes/kubernetes/blob/v1.36.4/staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go#L75-L77", "k8s.io/apiserver", "pkg/storage/cacher/cacher.go", 75, 77, 1},
	} {
		refs := find("x.md", c.line)
		if len(refs) != c.refs {
			t.Errorf("%q: %d citations %+v, want %d", c.line, len(refs), refs, c.refs)
			continue
		}
		if c.refs == 0 {
			continue
		}
		r := refs[0]
		if r.module != c.module || r.path != c.path || r.from != c.from || r.to != c.to {
			t.Errorf("%q: read as %s %s:%d-%d, want %s %s:%d-%d", c.line, r.module, r.path, r.from, r.to, c.module, c.path, c.from, c.to)
		}
	}
}
