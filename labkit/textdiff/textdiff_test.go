package textdiff

import (
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	got := strings.Join(Lines("a\nb\nc\n", "a\nB\nc\nd\n"), "|")
	want := "  a|- b|+ B|  c|+ d"
	if got != want {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
}

// TestShow: the heading names the line of the first difference, that line
// is marked, equal lines far from a change are left out, and a long line
// that differs late says at which character.
func TestShow(t *testing.T) {
	if s := Show("x\ny\n", "x\ny\n"); s != "" {
		t.Fatalf("Show of equal texts = %q, want \"\"", s)
	}
	want := "1\n2\n3\n4\n5\n6\n7\n"
	got := "1\n2\n3\n4\nfive\n6\n7\n"
	s := Show(want, got)
	for _, line := range []string{
		"first difference at line 5 (- want, + got):",
		"- 5   <- first difference",
		"+ five",
		"  4",
		"  6",
	} {
		if !strings.Contains(s, line) {
			t.Errorf("Show lacks %q:\n%s", line, s)
		}
	}
	if strings.Contains(s, "  1\n") {
		t.Errorf("Show keeps line 1, far from the change:\n%s", s)
	}
	long := "deltas [{Type:Added Object:a} {Type:Deleted Object:b}]"
	s = Show(long, strings.Replace(long, "{Type:Deleted Object:b}", "{Type:Deleted Object:b} {Type:Deleted Object:b}", 1))
	if !strings.Contains(s, "at character 54 of line 1") {
		t.Errorf("Show does not point into the long line:\n%s", s)
	}
	if s := Show("a\n", "a"); !strings.Contains(s, "final newline") {
		t.Errorf("Show of a missing final newline = %q", s)
	}
}

// TestShowMakesWhiteSpaceVisible: two lines that differ only by a trailing
// space or a tab look the same on a terminal; the diff marks them.
func TestShowMakesWhiteSpaceVisible(t *testing.T) {
	s := Show("resume at \nx\n", "resume at\nx\n")
	if !strings.Contains(s, "- resume at·") || !strings.Contains(s, "+ resume at\n") {
		t.Errorf("a trailing space is not visible:\n%s", s)
	}
	s = Show("a\tb\n", "a b\n")
	if !strings.Contains(s, "- a→b") {
		t.Errorf("a tab is not visible:\n%s", s)
	}
	s = Show("a\nb\n", "a\nc")
	if !strings.Contains(s, "final newline differs") {
		t.Errorf("a missing final newline beside another difference is not said:\n%s", s)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		`{"code":500}` + "\n": "`{\"code\":500}\\n`",
		"a \tb  ":             "`a →b··`",
		"x\r\n":               "`x\\r\\n`",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
