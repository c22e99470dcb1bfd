package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The learner's state lives in one directory, never committed: .cluster/learn
// at the workspace root (git-ignored with the rest of .cluster/), or
// $LABS_STATE when set (the tool's tests use a temporary one).
func stateDir(root string) string {
	if d := os.Getenv("LABS_STATE"); d != "" {
		return d
	}
	return filepath.Join(root, ".cluster", "learn")
}

func readState(root, name string, v any) {
	data, err := os.ReadFile(filepath.Join(stateDir(root), name))
	if err == nil {
		json.Unmarshal(data, v) // a damaged file is as good as none
	}
}

func writeState(root, name string, v any) error {
	dir := stateDir(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// statusCache is status.json: per lab, the hash of the files its tests
// depend on, and each exercise's state computed from them.
type statusCache map[string]labStatus

type labStatus struct {
	Hash      string            `json:"hash"`
	Exercises map[string]string `json:"exercises"` // name -> done | failing | not started
}

// labHash hashes every file the lab's tests can depend on: the lab itself,
// labkit, and the labs its go.mod requires. Same content, same hash: a second
// `labs` call needs no test run.
func labHash(root string, lab *Lab) (string, error) {
	// The labs it imports (through go.work, so not always in go.mod): any
	// "listwatch-labs/labs/NN-name/..." in its Go files.
	dirs := []string{lab.Dir, filepath.Join(root, "labkit")}
	seen := map[string]bool{lab.Name: true}
	filepath.WalkDir(lab.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, _ := os.ReadFile(path)
		for _, m := range labImport.FindAllStringSubmatch(string(data), -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				dirs = append(dirs, filepath.Join(root, "labs", m[1]))
			}
		}
		return nil
	})
	h := sha256.New()
	for _, dir := range dirs {
		var files []string
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != dir {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				files = append(files, path)
			}
			return nil
		})
		sort.Strings(files)
		for _, f := range files {
			rel, _ := filepath.Rel(root, f)
			io.WriteString(h, rel+"\x00")
			if fh, err := os.Open(f); err == nil {
				io.Copy(h, fh)
				fh.Close()
			}
			io.WriteString(h, "\x00")
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

var labImport = regexp.MustCompile(`"github.com/listwatch-labs/listwatch-labs/labs/([0-9][0-9]-[a-z0-9-]+)/`)

// hintsShown is hints.json: "03/flush-when-idle" -> how many hints were shown.
type hintsShown map[string]int
