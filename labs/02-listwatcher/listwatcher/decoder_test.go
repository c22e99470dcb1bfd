package listwatcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
)

var configMapKind = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// recorded reads a watch stream recorded from a real apiserver
// (testdata/recorded, made with curl against the lab cluster).
func recorded(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/recorded/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAll decodes every event of stream; it stops at the first error.
func decodeAll(stream []byte) ([]string, error) {
	d := NewDecoder(bytes.NewReader(stream), configMapKind)
	var got []string
	for {
		typ, obj, err := d.Decode()
		if err != nil {
			return got, err
		}
		if typ == watch.Error {
			got = append(got, fmt.Sprintf("ERROR %v", StatusError(obj)))
			continue
		}
		cm := obj.(*corev1.ConfigMap)
		got = append(got, fmt.Sprintf("%s %s rv=%s data=%v", typ, cm.Name, cm.ResourceVersion, cm.Data))
	}
}

func TestDecodeRecordedStream(t *testing.T) {
	got, err := decodeAll(recorded(t, "watch-configmaps.jsonl"))
	if err != io.EOF {
		t.Fatalf("Decode ended with %v, want io.EOF", err)
	}
	want := []string{
		"ADDED kube-root-ca.crt rv=377 data=map[ca.crt:",
		"BOOKMARK  rv=377 data=map[]",
		"ADDED app-config rv=378 data=map[color:blue size:small]",
		"MODIFIED app-config rv=379 data=map[color:blue size:small]",
		"MODIFIED app-config rv=380 data=map[color:green size:small]",
		"ADDED other rv=381 data=map[k:v]",
		"BOOKMARK  rv=381 data=map[]",
		"DELETED app-config rv=382 data=map[color:green size:small]",
		"BOOKMARK  rv=382 data=map[]",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %d = %q, want %q...", i, got[i], want[i])
		}
	}
}

func TestDecodeExpiredIsTyped(t *testing.T) {
	d := NewDecoder(bytes.NewReader(recorded(t, "watch-expired.jsonl")), configMapKind)
	typ, obj, err := d.Decode()
	if err != nil || typ != watch.Error {
		t.Fatalf("Decode = %v, %v; want an ERROR event", typ, err)
	}
	err = StatusError(obj)
	if !apierrors.IsResourceExpired(err) || !IsExpired(err) {
		t.Fatalf("IsResourceExpired(%v) = false, want true", err)
	}
	if apierrors.IsGone(err) {
		t.Fatalf("a reason Expired answered IsGone: the two must be distinguishable")
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 410 || status.Status().Message != "too old resource version: 1 (271)" {
		t.Fatalf("the error does not carry the Status: %#v", err)
	}
	gone := StatusError(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone})
	if !apierrors.IsGone(gone) || apierrors.IsResourceExpired(gone) || !IsExpired(gone) {
		t.Fatalf("reason Gone: IsGone=%v IsResourceExpired=%v", apierrors.IsGone(gone), apierrors.IsResourceExpired(gone))
	}
}

// TestDecodeBadInput: every broken stream ends in an error naming what was wrong.
func TestDecodeBadInput(t *testing.T) {
	cm := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"5"}}`
	tests := []struct{ name, stream, wantErr string }{
		{"truncated JSON", `{"type":"ADDED","object":{"kind":"Conf`, "stream ended inside a frame after 38 bytes"},
		{"not JSON", "hello\n", "frame is not a watch event"},
		{"wrong kind", `{"type":"ADDED","object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"}}}` + "\n", `ADDED event carries kind "Secret" apiVersion "v1", this watch is on "ConfigMap" "v1"`},
		{"wrong version", `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v2"}}` + "\n", `apiVersion "v2"`},
		{"unknown type", `{"type":"CHANGED","object":` + cm + "}\n", `unknown watch event type "CHANGED"`},
		{"no object", `{"type":"ADDED"}` + "\n", "ADDED event without an object"},
		{"null object", `{"type":"DELETED","object":null}` + "\n", "DELETED event without an object"},
		{"object of the wrong shape", `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","data":[1]}}` + "\n", "object is not a ConfigMap"},
		{"Status that is not an error", `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Success","code":200}}` + "\n", `Status that is not a failure (status "Success")`},
		{"ERROR without a Status", `{"type":"ERROR","object":` + cm + "}\n", `ERROR event carries kind "ConfigMap", want Status`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeAll([]byte(tt.stream))
			if err == nil || err == io.EOF || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// endless is a body that never ends and never sends a newline.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.n += len(p)
	return len(p), nil
}

func TestDecodeFrameTooLarge(t *testing.T) {
	body := &endless{}
	_, _, err := NewDecoder(body, configMapKind).Decode()
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("error = %v, want ErrFrameTooLarge", err)
	}
	// It gave up soon after 16 MiB, not after reading everything there is.
	if body.n > MaxFrameSize+1<<20 {
		t.Fatalf("read %d bytes before giving up", body.n)
	}
	// A frame just under the limit is fine.
	big := `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"big"},"data":{"k":"` +
		strings.Repeat("x", MaxFrameSize-200) + `"}}}` + "\n"
	if _, err := decodeAll([]byte(big)); err != io.EOF {
		t.Fatalf("a frame of %d bytes: %v", len(big), err)
	}
}

// TestDecodeStreams shows the decoder hands out each event as soon as its
// line is complete, while the body is still open: it never waits for, or
// holds, the whole body.
func TestDecodeStreams(t *testing.T) {
	r, w := io.Pipe()
	defer r.Close()
	d := NewDecoder(r, configMapKind)
	lines := strings.SplitAfter(string(recorded(t, "watch-configmaps.jsonl")), "\n")
	for i, line := range lines[:3] {
		go func() {
			// Split across two writes, like two TCP segments.
			w.Write([]byte(line[:10]))
			w.Write([]byte(line[10:]))
		}()
		if _, _, err := d.Decode(); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	w.Close()
}

// FuzzDecode: no input makes Decode panic or loop; every input ends with
// io.EOF or an error with a message.
func FuzzDecode(f *testing.F) {
	rec := recorded(f, "watch-configmaps.jsonl")
	f.Add(rec)
	f.Add(recorded(f, "watch-expired.jsonl"))
	f.Add(rec[:len(rec)/2]) // truncated in the middle of a frame
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"}}}` + "\n"))
	f.Add([]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Success"}}` + "\n"))
	f.Add([]byte(`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}`))
	f.Add([]byte("\n\n  \n"))
	f.Add(append(bytes.Repeat([]byte("x"), 4<<10+1), '\n')) // a frame over the limit
	f.Fuzz(func(t *testing.T, stream []byte) {
		d := NewDecoder(bytes.NewReader(stream), configMapKind)
		// The same code path as the 16 MiB limit, within reach of the inputs
		// a fuzzer makes (it rarely grows one past a few KiB). A 16 MiB seed
		// would be mutated into 16 MiB inputs, each taking a second: the
		// real limit has its own unit test above.
		d.maxFrame = 4 << 10
		// Each event consumes at least one byte, so this bounds the loop.
		for range len(stream) + 2 {
			typ, obj, err := d.Decode()
			if err == io.EOF {
				return
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatalf("an error without a message")
				}
				return
			}
			if obj == nil || typ == "" {
				t.Fatalf("event %q with object %v and no error", typ, obj)
			}
		}
		t.Fatalf("Decode did not reach the end of %d bytes", len(stream))
	})
}

// benchStream is 10,000 ConfigMap events shaped like the recorded ones
// (managedFields, labels, a few data keys), as the apiserver writes them.
func benchStream() []byte {
	var b bytes.Buffer
	types := []string{"ADDED", "MODIFIED", "MODIFIED", "DELETED"}
	for i := range 10000 {
		fmt.Fprintf(&b, `{"type":%q,"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"app-config-%d","namespace":"bench","uid":"182d8c32-c1e2-44c6-b86b-%012d","resourceVersion":"%d","creationTimestamp":"2026-11-21T05:05:40Z","labels":{"app":"demo","tier":"web"},"managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","time":"2026-11-21T05:05:40Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:color":{},"f:size":{}}}}]},"data":{"color":"blue-%d","size":"small","owner":"team-%d"}}}`+"\n",
			types[i%4], i/4, i, 1000+i, i, i%7)
	}
	return b.Bytes()
}

// loopReader serves data again and again, so b.N can exceed 10,000.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

// BenchmarkDecode decodes the same 10,000-event stream with our Decoder and
// with client-go's (rest/watch.Decoder over the JSON framer and the
// streaming decoder, as rest.Request.Watch builds it). One op is one event.
// For scale, impl=clientgo-protobuf decodes the same events as the apiserver
// sends them to a client that asks for protobuf (what typed clients do for
// built-in types): length-delimited frames of a protobuf WatchEvent whose
// object is a protobuf ConfigMap, decoded by client-go's protobuf serializer.
func BenchmarkDecode(b *testing.B) {
	stream := benchStream()
	scheme := k8sruntime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	codecs := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}
	info, ok := k8sruntime.SerializerInfoForMediaType(serializer.NewCodecFactory(scheme).SupportedMediaTypes(), "application/json")
	if !ok {
		b.Fatal("no JSON serializer")
	}
	pinfo, ok := k8sruntime.SerializerInfoForMediaType(serializer.NewCodecFactory(scheme).SupportedMediaTypes(), k8sruntime.ContentTypeProtobuf)
	if !ok {
		b.Fatal("no protobuf serializer")
	}
	clientGo := func(info k8sruntime.SerializerInfo) func(r io.Reader) watch.Decoder {
		return func(r io.Reader) watch.Decoder {
			frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(r))
			return restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer),
				codecs.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion))
		}
	}
	impls := []struct {
		name   string
		stream []byte
		new    func(r io.Reader) watch.Decoder
	}{
		{"impl=lab", stream, func(r io.Reader) watch.Decoder { return NewDecoder(r, configMapKind) }},
		{"impl=clientgo", stream, clientGo(info)},
		{"impl=clientgo-protobuf", protobufStream(b, stream, codecs, pinfo), clientGo(pinfo)},
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			d := impl.new(&loopReader{data: impl.stream})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				typ, obj, err := d.Decode()
				if err != nil || obj == nil || typ == "" {
					b.Fatalf("Decode: %v", err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/event")
		})
	}
}

// protobufStream re-encodes the events of a JSON watch stream the way the
// apiserver writes a protobuf watch: each object encoded in protobuf,
// wrapped in a metav1.WatchEvent, written as one length-delimited frame.
func protobufStream(tb testing.TB, jsonStream []byte, codecs serializer.WithoutConversionCodecFactory, pinfo k8sruntime.SerializerInfo) []byte {
	var out bytes.Buffer
	events := streaming.NewEncoder(pinfo.StreamSerializer.Framer.NewFrameWriter(&out), pinfo.StreamSerializer.Serializer)
	objects := codecs.EncoderForVersion(pinfo.Serializer, corev1.SchemeGroupVersion)
	d := NewDecoder(bytes.NewReader(jsonStream), configMapKind)
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			return out.Bytes()
		}
		if err != nil {
			tb.Fatal(err)
		}
		raw, err := k8sruntime.Encode(objects, obj)
		if err != nil {
			tb.Fatal(err)
		}
		if err := events.Encode(&metav1.WatchEvent{Type: string(typ), Object: k8sruntime.RawExtension{Raw: raw}}); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestProtobufBenchStream: the protobuf stream of BenchmarkDecode holds the
// same events as the JSON one, as client-go decodes them, so the benchmark
// compares like with like.
func TestProtobufBenchStream(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}
	pinfo, _ := k8sruntime.SerializerInfoForMediaType(serializer.NewCodecFactory(scheme).SupportedMediaTypes(), k8sruntime.ContentTypeProtobuf)
	jsonStream := benchStream()
	pb := protobufStream(t, jsonStream, codecs, pinfo)
	frames := pinfo.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(pb)))
	theirs := restclientwatch.NewDecoder(streaming.NewDecoder(frames, pinfo.StreamSerializer.Serializer),
		codecs.DecoderToVersion(pinfo.Serializer, corev1.SchemeGroupVersion))
	ours := NewDecoder(bytes.NewReader(jsonStream), configMapKind)
	n := 0
	for {
		typ, obj, err := ours.Decode()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ptyp, pobj, err := theirs.Decode()
		if err != nil {
			t.Fatalf("protobuf event %d: %v", n, err)
		}
		want, got := obj.(*corev1.ConfigMap), pobj.(*corev1.ConfigMap)
		if ptyp != typ || got.Name != want.Name || got.ResourceVersion != want.ResourceVersion || !reflect.DeepEqual(got.Data, want.Data) || len(got.ManagedFields) != 1 {
			t.Fatalf("event %d: protobuf %s %s rv=%s %v, JSON %s %s rv=%s %v", n, ptyp, got.Name, got.ResourceVersion, got.Data, typ, want.Name, want.ResourceVersion, want.Data)
		}
		n++
	}
	if n != 10000 {
		t.Fatalf("%d events, want 10000", n)
	}
}
