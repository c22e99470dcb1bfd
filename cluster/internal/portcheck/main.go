// Command portcheck type-checks the packages of a module for another
// platform (macOS: darwin/arm64, darwin/amd64) without compiling its
// dependencies for it. scripts/cross-build.sh builds it once and runs it in
// every module (cluster/ and each of go.work) instead of
// `GOOS=darwin go vet ./...`.
//
//	cd cluster && GOWORK=off go run ./internal/portcheck [-os darwin] [-arch arm64,amd64] [packages]
//
// Upstream counterpart: what `go vet` does before its analyzers run, the
// type-check of each package and its test variants (cmd/go's vet action and
// golang.org/x/tools/go/analysis/unitchecker, which reads compiler export
// data the same way), minus the analyzers.
//
// Why not go vet: vet for darwin needs the export data of every dependency
// compiled for darwin, and cluster/ depends on k8s.io/kubernetes and etcd:
// about 2,700 packages, 20+ CPU-minutes per architecture with an empty build
// cache. Our own code is small, and its OS-specific surface is the standard
// library (syscall.SysProcAttr, syscall.Kill, syscall.Flock, os/signal,
// /proc). So this checker builds the type universe from two sources:
//
//   - the standard library from export data compiled FOR THE TARGET
//     (`GOOS=darwin GOARCH=arm64 go list -export -deps <std imports>`): a
//     compile of 191 std packages, about 30 CPU-seconds per architecture
//     with a cold cache, cached after;
//   - every other package (k8s.io/..., go.etcd.io/..., sigs.k8s.io/kind)
//     from export data compiled for THE HOST (`go list -export -deps`
//     without GOOS): scripts/build-labcluster.sh has compiled all of it
//     already, so it is a build-cache hit. The exported API of the packages
//     we call does not depend on GOOS, so host export data stands in for it.
//
// Our own packages are type-checked from source, with the files `go list`
// selects for the target (build tags and _GOOS.go suffixes applied), as
// three variants like vet's: the package, the package with its _test.go
// files, and the external _test package (which imports the second).
//
// The target's standard library is loaded first, whole, so our code sees
// the darwin syscall package, not the host's. Host export data of a
// Kubernetes package can still mention a std name that darwin lacks (from an
// inlinable function body, say); the importer then adds that name to the
// darwin package. Such names are recorded (every std package's names are
// snapshotted after the target load) and any use of one by our code is an
// error, so a Linux-only std name cannot pass through that back door.
//
// What it does NOT catch:
//   - a Kubernetes or etcd package that does not build for darwin (their own
//     OS-specific files are never compiled for darwin here);
//   - an exported API of a dependency that differs by GOOS (we see the
//     host's; none that cluster/ calls does);
//   - vet's analyzers (printf, copylocks, ...): those run, on linux, in
//     scripts/test.sh's `go vet`;
//   - what only the compiler or linker sees (a body-less func, a bad
//     //go:linkname), as go vet would not either; cgo files are refused.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the checker in the current directory, which must be inside the
// module whose packages are checked.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("portcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	goos := fs.String("os", "darwin", "target GOOS")
	archs := fs.String("arch", "arm64,amd64", "target GOARCHes, comma-separated")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	failed := false
	for _, arch := range strings.Split(*archs, ",") {
		ok, err := check(".", *goos, arch, patterns, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "portcheck: %s/%s: %v\n", *goos, arch, err)
			return 1
		}
		failed = failed || !ok
	}
	if failed {
		return 1
	}
	return 0
}

// listed is the part of `go list -json` output the checker reads.
type listed struct {
	Dir          string
	ImportPath   string
	Name         string
	Standard     bool
	Export       string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
}

// goList runs `go list` in dir with extra environment and decodes its JSON
// stream.
func goList(dir string, env []string, args ...string) ([]listed, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=Dir,ImportPath,Name,Standard,Export,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,Error"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, errb.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(&out)
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// isStd says whether an import path names a standard-library package: the
// go command's own rule, no dot in the first path element.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// source is one of our packages, parsed for the target.
type source struct {
	p                  listed
	files, tests, xtst []*ast.File
}

// check type-checks the packages matching patterns for goos/goarch, printing
// one line per package; it reports false if any has errors, and an error if
// the checker itself could not run.
func check(dir, goos, goarch string, patterns []string, stdout io.Writer) (bool, error) {
	target := []string{"GOOS=" + goos, "GOARCH=" + goarch}
	platform := goos + "/" + goarch

	// Our packages, with the files the target selects. -find: no
	// dependency resolution, which would load all of Kubernetes.
	own, err := goList(dir, target, append([]string{"-find"}, patterns...)...)
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	srcs := map[string]*source{}
	var order []string
	stdImports, hostImports := map[string]bool{}, map[string]bool{}
	ok := true
	for _, p := range own {
		if p.Error != nil {
			fmt.Fprintf(stdout, "FAIL %s (%s)\n    %s\n", p.ImportPath, platform, p.Error.Err)
			ok = false
			continue
		}
		if len(p.CgoFiles) > 0 {
			fmt.Fprintf(stdout, "FAIL %s (%s)\n    cgo files are not supported by portcheck: %s\n", p.ImportPath, platform, strings.Join(p.CgoFiles, " "))
			ok = false
			continue
		}
		s := &source{p: p}
		var perr error
		parse := func(names []string) []*ast.File {
			var fs []*ast.File
			for _, n := range names {
				f, err := parser.ParseFile(fset, filepath.Join(p.Dir, n), nil, parser.SkipObjectResolution)
				if err != nil {
					perr = errors.Join(perr, err)
					continue
				}
				fs = append(fs, f)
				for _, im := range f.Imports {
					path, _ := strconv.Unquote(im.Path.Value)
					if isStd(path) {
						stdImports[path] = true
					} else {
						hostImports[path] = true
					}
				}
			}
			return fs
		}
		s.files, s.tests, s.xtst = parse(p.GoFiles), parse(p.TestGoFiles), parse(p.XTestGoFiles)
		if perr != nil {
			fmt.Fprintf(stdout, "FAIL %s (%s)\n    %v\n", p.ImportPath, platform, perr)
			ok = false
			continue
		}
		srcs[p.ImportPath] = s
		order = append(order, p.ImportPath)
	}
	delete(stdImports, "unsafe")
	delete(stdImports, "C")
	for path := range srcs {
		delete(hostImports, path)
		delete(stdImports, path)
	}

	exports := map[string]string{}
	var preload []string
	if len(stdImports) > 0 {
		std, err := goList(dir, target, append([]string{"-export", "-deps"}, sortedKeys(stdImports)...)...)
		if err != nil {
			return false, err
		}
		for _, p := range std {
			if p.Error != nil {
				return false, fmt.Errorf("standard library for %s: %s: %s", platform, p.ImportPath, p.Error.Err)
			}
			if p.ImportPath != "unsafe" && p.Export != "" {
				exports[p.ImportPath] = p.Export
				preload = append(preload, p.ImportPath)
			}
		}
	}
	if len(hostImports) > 0 {
		// Host export data, with the compile settings of
		// scripts/build-labcluster.sh's go build (its -ldflags only
		// matter to the linker), so it is the same build-cache entries.
		// GOOS and GOARCH are set to this binary's own, go run builds it
		// for the host, in case the environment names another platform.
		hostEnv := []string{"GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH}
		host, err := goList(dir, hostEnv, append([]string{"-export", "-deps"}, sortedKeys(hostImports)...)...)
		if err != nil {
			return false, err
		}
		for _, p := range host {
			if p.Error != nil {
				return false, fmt.Errorf("host export data: %s: %s", p.ImportPath, p.Error.Err)
			}
			if !p.Standard && p.Export != "" {
				exports[p.ImportPath] = p.Export
			}
		}
	}

	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(f)
	})
	// The target's standard library first, whole, then a snapshot of its
	// names: anything added later came from host export data.
	targetNames := map[*types.Package]map[string]bool{}
	for _, path := range preload {
		pkg, err := gc.Import(path)
		if err != nil {
			return false, fmt.Errorf("reading %s export data of %s: %v", platform, path, err)
		}
		names := map[string]bool{}
		for _, n := range pkg.Scope().Names() {
			names[n] = true
		}
		targetNames[pkg] = names
	}

	sizes := types.SizesFor("gc", goarch)
	if sizes == nil {
		return false, fmt.Errorf("unknown GOARCH %q", goarch)
	}
	c := &checker{fset: fset, gc: gc, sizes: sizes, srcs: srcs, targetNames: targetNames,
		done: map[string]*types.Package{}, errs: map[string][]error{}, busy: map[string]bool{}}

	for _, path := range order {
		s := srcs[path]
		var errs []error
		// The package itself, as others import it.
		pkg, perrs := c.checkPkg(path)
		errs = append(errs, perrs...)
		// With its _test.go files (vet's "pkg [pkg.test]").
		under := pkg
		if len(s.tests) > 0 {
			var terrs []error
			under, terrs = c.typeCheck(path, slices.Concat(s.files, s.tests), c)
			errs = append(errs, terrs...)
		}
		// The external test package, importing the test variant.
		if len(s.xtst) > 0 {
			_, xerrs := c.typeCheck(path+"_test", s.xtst, &overlay{Importer: c, path: path, pkg: under})
			errs = append(errs, xerrs...)
		}
		if len(errs) == 0 {
			fmt.Fprintf(stdout, "ok %s (%s)\n", path, platform)
			continue
		}
		ok = false
		fmt.Fprintf(stdout, "FAIL %s (%s)\n", path, platform)
		for _, e := range dedup(errs) {
			fmt.Fprintf(stdout, "    %s\n", e)
		}
	}
	return ok, nil
}

// checker type-checks our packages for one platform. It is the importer our
// packages see: our own packages from source, everything else from export
// data.
type checker struct {
	fset  *token.FileSet
	gc    types.Importer
	sizes types.Sizes
	srcs  map[string]*source
	// targetNames: each target std package's names right after its load
	// from target export data.
	targetNames map[*types.Package]map[string]bool

	done map[string]*types.Package
	errs map[string][]error
	busy map[string]bool
}

func (c *checker) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if _, ok := c.srcs[path]; ok {
		pkg, errs := c.checkPkg(path)
		if len(errs) > 0 {
			return pkg, fmt.Errorf("%s has type errors for this platform", path)
		}
		return pkg, nil
	}
	return c.gc.Import(path)
}

// checkPkg type-checks one of our packages (its GoFiles), once.
func (c *checker) checkPkg(path string) (*types.Package, []error) {
	if pkg, ok := c.done[path]; ok {
		return pkg, c.errs[path]
	}
	if c.busy[path] {
		return nil, []error{fmt.Errorf("import cycle through %s", path)}
	}
	c.busy[path] = true
	pkg, errs := c.typeCheck(path, c.srcs[path].files, c)
	c.done[path], c.errs[path] = pkg, errs
	return pkg, errs
}

// typeCheck checks files as package path and returns every error, including
// each use of a std name the target's export data did not have.
func (c *checker) typeCheck(path string, files []*ast.File, imp types.Importer) (*types.Package, []error) {
	var errs []error
	conf := types.Config{
		Importer: imp,
		Sizes:    c.sizes,
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				err = fmt.Errorf("%s: %s", c.position(te.Pos), te.Msg)
			}
			errs = append(errs, err)
		},
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, _ := conf.Check(path, c.fset, files, info)
	var ids []*ast.Ident
	for id, obj := range info.Uses {
		if obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() {
			continue // not a package-level name
		}
		if names, ok := c.targetNames[obj.Pkg()]; ok && !names[obj.Name()] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Pos() < ids[j].Pos() })
	for _, id := range ids {
		obj := info.Uses[id]
		errs = append(errs, fmt.Errorf("%s: %s.%s is not in the target's standard library (it came from host export data)",
			c.position(id.Pos()), obj.Pkg().Path(), obj.Name()))
	}
	return pkg, errs
}

// position is file:line:col, the file relative to the working directory
// when it is below it.
func (c *checker) position(pos token.Pos) string {
	p := c.fset.Position(pos)
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p.Filename); err == nil && !strings.HasPrefix(rel, "..") {
			p.Filename = rel
		}
	}
	return p.String()
}

// overlay resolves one path (the package under test) to a given package.
type overlay struct {
	types.Importer
	path string
	pkg  *types.Package
}

func (o *overlay) Import(path string) (*types.Package, error) {
	if path == o.path {
		return o.pkg, nil
	}
	return o.Importer.Import(path)
}

func dedup(errs []error) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range errs {
		s := e.Error()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
