package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Lab is one labs/NN-name directory and its exercises.json.
type Lab struct {
	Num       string     // "03"
	Dir       string     // absolute path of labs/03-watchserver
	Name      string     // "03-watchserver"
	Exercises []Exercise `json:"exercises"`
	Combined  []TestRef  `json:"combined"`
	Demo      []DemoStep `json:"demo"`
}

// Exercise is one entry of a lab's exercises.json: a piece of the lab's
// implementation removed behind the build tag exercise.
type Exercise struct {
	Name     string    `json:"name"`
	Summary  string    `json:"summary"`
	File     string    `json:"file"`     // the stub the learner edits (built with -tags exercise)
	Solution string    `json:"solution"` // the solution file (built without the tag)
	Readme   string    `json:"readme"`   // README.md#anchor
	Tests    []TestRef `json:"tests"`
	Hints    []string  `json:"hints"`
}

// TestRef names one test (or subtest path) of one package of the lab.
type TestRef struct {
	Package string   `json:"package"` // ./watchserver, or . for the lab's root
	Run     string   `json:"run"`     // TestName or TestScripts/lab/too-old
	Cluster bool     `json:"cluster"` // needs a cluster (and is slow in exercise mode)
	Needs   []string `json:"needs"`   // combined tests only: the exercises it needs
}

// DemoStep is one narrated step of `labs run NN`.
type DemoStep struct {
	Say        string `json:"say"`
	Run        string `json:"run"`        // a bash command, run at the workspace root
	Background bool   `json:"background"` // keep it running until the demo ends
	Wait       string `json:"wait"`       // background: wait until its output matches this regexp
}

func (t TestRef) String() string {
	pkg := strings.TrimPrefix(t.Package, "./")
	if pkg == "." || pkg == "" {
		return t.Run
	}
	return t.Run + " (" + pkg + ")"
}

// loadLabs finds every labs/NN-* directory of the workspace, with its
// exercises.json if it has one (a lab without one has no exercises yet).
func loadLabs(root string) ([]*Lab, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "labs", "[0-9][0-9]-*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	var labs []*Lab
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		name := filepath.Base(dir)
		lab := &Lab{Num: name[:2], Dir: dir, Name: name}
		data, err := os.ReadFile(filepath.Join(dir, "exercises.json"))
		switch {
		case os.IsNotExist(err):
		case err != nil:
			return nil, err
		default:
			if err := json.Unmarshal(data, lab); err != nil {
				return nil, fmt.Errorf("%s/exercises.json: %v", name, err)
			}
		}
		labs = append(labs, lab)
	}
	return labs, nil
}

// findLab accepts "3", "03" or "03-watchserver".
func findLab(labs []*Lab, arg string) (*Lab, error) {
	if len(arg) == 1 {
		arg = "0" + arg
	}
	for _, lab := range labs {
		if lab.Num == arg || lab.Name == arg {
			return lab, nil
		}
	}
	var names []string
	for _, lab := range labs {
		names = append(names, lab.Num)
	}
	return nil, fmt.Errorf("no lab %q (labs: %s)", arg, strings.Join(names, " "))
}

func (lab *Lab) exercise(name string) (*Exercise, error) {
	for i := range lab.Exercises {
		if lab.Exercises[i].Name == name {
			return &lab.Exercises[i], nil
		}
	}
	var names []string
	for _, ex := range lab.Exercises {
		names = append(names, ex.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("lab %s has no exercises yet", lab.Num)
	}
	return nil, fmt.Errorf("lab %s has no exercise %q (it has: %s)", lab.Num, name, strings.Join(names, ", "))
}
