package labkit

// HTTP/1.1 chunked transfer coding (RFC 9112 section 7.1) made visible: each
// chunk is "SIZE-IN-HEX\r\n" DATA "\r\n", and "0\r\n\r\n" ends the body.
// `curl --raw` prints the body with this framing left in; DescribeChunks says
// what each chunk carried, which shows the apiserver flushing once per event.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// DescribeChunks parses a raw chunked body and describes it one chunk a line:
//
//	chunk 1: 1 frame (ADDED ConfigMap cm-a)
//	chunk 2: 2 frames (MODIFIED ConfigMap cm-a, DELETED ConfigMap cm-a) + the start of the next
//	chunk 3: 1 frame (ADDED ConfigMap cm-b, begun in chunk 2)
//	end: terminating chunk
//
// Frames are newline-terminated JSON; a frame may span chunks, and is named in
// the chunk that completes it. Sizes are checked but not shown: they change
// with the length of resourceVersions and timestamps.
func DescribeChunks(raw []byte) (string, error) {
	var b strings.Builder
	var carry []byte // the start of a frame that continues in the next chunk
	carryFrom := 0   // the chunk where that frame began
	for n := 1; ; n++ {
		if len(raw) == 0 {
			b.WriteString("end: no terminating chunk (the connection was cut)\n")
			return b.String(), nil
		}
		line, rest, ok := bytes.Cut(raw, []byte("\r\n"))
		if !ok {
			return b.String(), fmt.Errorf("chunk %d: no CRLF after the size line", n)
		}
		sizeText, _, _ := bytes.Cut(line, []byte(";")) // chunk extensions are allowed, and ignored
		size, err := strconv.ParseUint(strings.TrimSpace(string(sizeText)), 16, 32)
		if err != nil {
			return b.String(), fmt.Errorf("chunk %d: size line %q is not hexadecimal", n, line)
		}
		if size == 0 {
			if len(carry) > 0 {
				return b.String(), fmt.Errorf("the body ended inside a frame begun in chunk %d", carryFrom)
			}
			b.WriteString("end: terminating chunk\n")
			return b.String(), nil
		}
		if uint64(len(rest)) < size+2 {
			fmt.Fprintf(&b, "chunk %d: cut off (%d of %d bytes)\n", n, len(rest), size)
			return b.String(), nil
		}
		if !bytes.Equal(rest[size:size+2], []byte("\r\n")) {
			return b.String(), fmt.Errorf("chunk %d: no CRLF after %d bytes of data", n, size)
		}
		data := append(carry, rest[:size]...)
		raw = rest[size+2:]

		frames := bytes.Split(data, []byte("\n"))
		remainder := frames[len(frames)-1] // after the last newline: incomplete
		frames = frames[:len(frames)-1]
		var names []string
		for i, f := range frames {
			name := describeFrame(f)
			if i == 0 && len(carry) > 0 {
				name += fmt.Sprintf(", begun in chunk %d", carryFrom)
			}
			names = append(names, name)
		}
		word := "frames"
		if len(frames) == 1 {
			word = "frame"
		}
		fmt.Fprintf(&b, "chunk %d: %d %s", n, len(frames), word)
		if len(names) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(names, ", "))
		}
		if len(remainder) > 0 {
			b.WriteString(" + the start of the next")
			if len(carry) == 0 || len(frames) > 0 {
				carryFrom = n
			}
		}
		b.WriteString("\n")
		carry = append([]byte(nil), remainder...)
	}
}

// describeFrame names the event in one frame: "ADDED ConfigMap cm-a".
func describeFrame(f []byte) string {
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"object"`
	}
	if err := json.Unmarshal(f, &ev); err != nil || ev.Type == "" {
		return "not a watch event"
	}
	return strings.TrimSpace(ev.Type + " " + ev.Object.Kind + " " + ev.Object.Metadata.Name)
}
