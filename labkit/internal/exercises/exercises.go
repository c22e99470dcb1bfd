// Package exercises reads a lab's exercises.json for labkit: which exercise
// a failing test checks (labkit.ChecksExercise), and which exercises a
// scenario's subtest is listed for. It has no TestMain, so its tests need no
// cluster.
package exercises

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Listed returns the exercises that exercises.json lists test (a
// full test name, as t.Name() gives it) for, in the package of the working
// directory.
func Listed(test string) []string {
	dir, list, ok := read()
	if !ok {
		return nil
	}
	cwd, _ := os.Getwd()
	rel, err := filepath.Rel(dir, cwd)
	if err != nil {
		return nil
	}
	pkg := "./" + filepath.ToSlash(rel)
	if rel == "." {
		pkg = "."
	}
	var names []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, ex := range list.Exercises {
		for _, ref := range ex.Tests {
			if ref.Package == pkg && ref.Run == test {
				add(ex.Name)
			}
		}
	}
	for _, c := range list.Combined {
		if c.Package == pkg && c.Run == test {
			for _, n := range c.Needs {
				add(n)
			}
		}
	}
	return names
}

type testRef struct {
	Package string   `json:"package"`
	Run     string   `json:"run"`
	Needs   []string `json:"needs"`
}

type Entry struct {
	Lab      string
	Name     string    `json:"name"`
	Summary  string    `json:"summary"`
	File     string    `json:"file"`
	Solution string    `json:"solution"`
	Readme   string    `json:"readme"`
	Tests    []testRef `json:"tests"`
}

type List struct {
	Lab       string    `json:"lab"`
	Exercises []Entry   `json:"exercises"`
	Combined  []testRef `json:"combined"`
}

// read reads exercises.json from the nearest directory at or above
// the test's working directory (its package's) that has one.
func read() (string, List, bool) {
	dir, _ := os.Getwd()
	for {
		if list, ok := readFile(dir); ok {
			return dir, list, true
		}
		if _, err := os.Stat(filepath.Join(dir, "exercises.json")); err == nil {
			return "", List{}, false // there, but not valid
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", List{}, false
		}
		dir = parent
	}
}

func readFile(dir string) (List, bool) {
	var list List
	data, err := os.ReadFile(filepath.Join(dir, "exercises.json"))
	if err != nil || json.Unmarshal(data, &list) != nil {
		return List{}, false
	}
	return list, true
}

// Find finds name in this lab's exercises.json or, for "NN/NAME",
// in lab NN's (a directory NN-* beside this lab's).
func Find(name string) (Entry, bool) {
	dir, list, ok := read()
	if !ok {
		return Entry{}, false
	}
	other := "" // another lab's directory, for "NN/NAME"
	if lab, short, found := strings.Cut(name, "/"); found {
		dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), lab+"-*"))
		if len(dirs) != 1 {
			return Entry{}, false
		}
		if list, ok = readFile(dirs[0]); !ok {
			return Entry{}, false
		}
		name, other = short, filepath.Base(dirs[0])
	}
	for _, ex := range list.Exercises {
		if ex.Name == name {
			ex.Lab = list.Lab
			if other != "" {
				ex.File = "../" + other + "/" + ex.File
				ex.Solution = "../" + other + "/" + ex.Solution
			}
			return ex, true
		}
	}
	return Entry{}, false
}
