// Command gen writes the simulator's protobuf type table and its test vectors.
//
// The table (../types.json) is what src/sim/proto_body/ decodes request bodies with: every
// Go type reachable from the built-in kinds the simulator serves, each field with its
// protobuf number, its JSON name and options (omitempty, omitzero, inline), whether it
// is a pointer, and its Go kind — read by reflection from client-go's scheme (and
// apiextensions'), the same struct tags gogo-protobuf and encoding/json read. Types that
// marshal themselves (metav1.Time, resource.Quantity, intstr.IntOrString, ...) are named
// instead of walked: the Rust decoder renders each as its MarshalJSON does.
//
// The vectors (../vectors.json.gz) are objects of every kind filled by apimachinery's
// roundtrip fuzzer, encoded by Go to protobuf, decoded back and marshalled to JSON: the
// Rust test asserts decode(protobuf) == Go's JSON for each. ../quantities.json holds
// resource.Quantity strings (hand-picked quirks and 3,000 random ones) with the JSON Go
// writes for each after ParseQuantity, or null where Go refuses it.
//
// Run from this directory (Go >= 1.26; modules from the Go module proxy):
//
//	go run . -builtins ../../builtin-resources.json -out ..
//
// Regenerate when go.mod moves to a new Kubernetes release (k8s.io/api v0.37.2 now).
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/resource"
	genericfuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// special: the types whose JSON is their own MarshalJSON, by the name the Rust side
// knows them by. Their protobuf layout comes from their tags where they have them, else
// from `layout`.
var special = map[reflect.Type]string{
	reflect.TypeFor[metav1.Time]():                           "Time",
	reflect.TypeFor[metav1.MicroTime]():                      "MicroTime",
	reflect.TypeFor[metav1.Duration]():                       "Duration",
	reflect.TypeFor[metav1.FieldsV1]():                       "FieldsV1",
	reflect.TypeFor[intstr.IntOrString]():                    "IntOrString",
	reflect.TypeFor[resource.Quantity]():                     "Quantity",
	reflect.TypeFor[runtime.RawExtension]():                  "RawExtension",
	reflect.TypeFor[apiextv1.JSON]():                         "JSON",
	reflect.TypeFor[apiextv1.JSONSchemaPropsOrArray]():       "JSONSchemaPropsOrArray",
	reflect.TypeFor[apiextv1.JSONSchemaPropsOrBool]():        "JSONSchemaPropsOrBool",
	reflect.TypeFor[apiextv1.JSONSchemaPropsOrStringArray](): "JSONSchemaPropsOrStringArray",
}

// layout: the wire layout of special types whose protobuf code is hand-written (no
// struct tags): apimachinery's time_proto.go (Timestamp), quantity_proto.go and
// fieldsv1.go.
var layout = map[string][]field{
	"Time":      {{1, "seconds", "i64", ""}, {2, "nanos", "i32", ""}},
	"MicroTime": {{1, "seconds", "i64", ""}, {2, "nanos", "i32", ""}},
	"Quantity":  {{1, "string", "s", ""}},
	"FieldsV1":  {{1, "Raw", "y", ""}},
}

// field: [protobuf number, JSON name (Go's field name where JSON has none), type, flags].
// Type: s string, b bool, i32 i64 u32 u64 f32 f64, y bytes, mN message N, []T repeated,
// map[K]V. Flags: p pointer, o omitempty, z omitzero, i inline (embedded), n no JSON.
type field struct {
	Num   int
	Name  string
	Type  string
	Flags string
}

func (f field) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{f.Num, f.Name, f.Type, f.Flags})
}

type typeEntry struct {
	Name    string `json:"name"`
	Special string `json:"special,omitempty"`
	// List: a named slice type protobuf wraps in a message (`repeated items = 1`),
	// whose JSON is the plain array (authentication's ExtraValue).
	List   bool    `json:"list,omitempty"`
	Fields []field `json:"fields"`
}

type table struct {
	Comment string      `json:"comment"`
	Version string      `json:"version"`
	Kinds   [][]any     `json:"kinds"`
	Types   []typeEntry `json:"types"`
	index   map[reflect.Type]int
}

func (t *table) ref(rt reflect.Type) int {
	if i, ok := t.index[rt]; ok {
		return i
	}
	i := len(t.Types)
	t.index[rt] = i
	t.Types = append(t.Types, typeEntry{Name: strings.TrimPrefix(rt.PkgPath(), "k8s.io/") + "." + rt.Name()})
	entry := typeEntry{Name: t.Types[i].Name}
	unmarshaler := reflect.TypeFor[interface{ Unmarshal([]byte) error }]()
	switch {
	case special[rt] != "":
		entry.Special = special[rt]
		entry.Fields = layout[entry.Special]
		if entry.Fields == nil {
			entry.Fields = t.fields(rt)
		}
	case rt.Kind() == reflect.Slice && reflect.PointerTo(rt).Implements(unmarshaler):
		entry.List = true
		entry.Fields = []field{{1, "items", "[]" + t.expr(rt.Elem(), rt.Name()), ""}}
	case rt.Kind() == reflect.Struct:
		if rt.Implements(reflect.TypeFor[json.Marshaler]()) {
			fail("%s marshals its own JSON and is not a known special type", rt)
		}
		entry.Fields = t.fields(rt)
	default:
		fail("%s is not a struct", rt)
	}
	t.Types[i] = entry
	return i
}

// fields: a struct's fields in declaration order, as encoding/json lists them.
func (t *table) fields(rt reflect.Type) []field {
	out := []field{}
	for i := range rt.NumField() {
		sf := rt.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("protobuf")
		jsonTag, hasJSON := sf.Tag.Lookup("json")
		parts := strings.Split(jsonTag, ",")
		name, opts := parts[0], parts[1:]
		flags := ""
		for _, o := range opts {
			switch o {
			case "omitempty":
				flags += "o"
			case "omitzero":
				flags += "z"
			case "inline", "":
			default:
				fail("%s.%s: json option %q", rt, sf.Name, o)
			}
		}
		if name == "-" && len(opts) == 0 {
			flags += "n"
			name = sf.Name
		}
		if sf.Anonymous && name == "" {
			flags += "i"
		}
		if name == "" {
			name = sf.Name
		}
		num := 0
		if tag == "" {
			// TypeMeta travels in the envelope; anything else protobuf does not carry
			// must be omitted from JSON when zero, or JSON would show what no body says.
			if sf.Type == reflect.TypeFor[metav1.TypeMeta]() || strings.Contains(flags, "n") || (hasJSON && strings.Contains(flags, "o")) {
				continue
			}
			fail("%s.%s has no protobuf tag and no omitempty", rt, sf.Name)
		}
		if _, err := fmt.Sscanf(strings.Split(tag, ",")[1], "%d", &num); err != nil {
			fail("%s.%s: protobuf tag %q", rt, sf.Name, tag)
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			flags += "p"
			ft = ft.Elem()
		}
		out = append(out, field{num, name, t.expr(ft, rt.Name()+"."+sf.Name), flags})
	}
	return out
}

// expr: a field type's code.
func (t *table) expr(ft reflect.Type, where string) string {
	if special[ft] != "" || ft.Kind() == reflect.Struct {
		return fmt.Sprintf("m%d", t.ref(ft))
	}
	unmarshaler := reflect.TypeFor[interface{ Unmarshal([]byte) error }]()
	switch ft.Kind() {
	case reflect.String:
		return "s"
	case reflect.Bool:
		return "b"
	case reflect.Int32:
		return "i32"
	case reflect.Int64:
		return "i64"
	case reflect.Uint32:
		return "u32"
	case reflect.Uint64:
		return "u64"
	case reflect.Float32:
		return "f32"
	case reflect.Float64:
		return "f64"
	case reflect.Slice:
		if ft.Elem().Kind() == reflect.Uint8 {
			return "y"
		}
		if ft.Name() != "" && reflect.PointerTo(ft).Implements(unmarshaler) {
			return fmt.Sprintf("m%d", t.ref(ft))
		}
		if ft.Elem().Kind() == reflect.Pointer {
			fail("%s: a slice of pointers", where)
		}
		return "[]" + t.expr(ft.Elem(), where)
	case reflect.Map:
		if ft.Key().Kind() != reflect.String {
			fail("%s: a map keyed by %s", where, ft.Key())
		}
		if ft.Key().Implements(reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()) {
			fail("%s: a map key with its own text form", where)
		}
		return "map[s]" + t.expr(ft.Elem(), where)
	}
	fail("%s: unsupported Go type %s", where, ft)
	return ""
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gen: "+format+"\n", args...)
	os.Exit(1)
}

// served: the group/versions builtin-resources.json lists.
func served(path string) (map[schema.GroupVersion]bool, string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	var doc struct {
		Kubernetes string
		Groups     []struct {
			Group    string
			Versions []struct{ Version string }
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		fail("%s: %v", path, err)
	}
	out := map[schema.GroupVersion]bool{}
	for _, g := range doc.Groups {
		for _, v := range g.Versions {
			out[schema.GroupVersion{Group: g.Group, Version: v.Version}] = true
		}
	}
	return out, doc.Kubernetes
}

func main() {
	builtins := flag.String("builtins", "../../builtin-resources.json", "the simulator's built-in resources")
	out := flag.String("out", "..", "where types.json and vectors.json.gz go")
	perKind := flag.Int("per-kind", 2, "fuzzed objects per kind")
	seed := flag.Int64("seed", 1, "the fuzzer's seed")
	flag.Parse()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fail("%v", err)
	}
	if err := apiextv1.AddToScheme(scheme); err != nil {
		fail("%v", err)
	}
	if err := apiregistrationv1.AddToScheme(scheme); err != nil {
		fail("%v", err)
	}
	gvs, kube := served(*builtins)
	var gvks []schema.GroupVersionKind
	for gvk := range scheme.AllKnownTypes() {
		if gvs[gvk.GroupVersion()] {
			gvks = append(gvks, gvk)
		}
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })

	t := &table{
		Comment: "Protobuf layout and JSON form of every type of the built-in kinds the simulator serves (" + kube +
			"), read from the Go types of k8s.io/api by crates/sim/src/proto_body/gen (see its main.go to regenerate).",
		Version: version(),
		index:   map[reflect.Type]int{},
	}
	for _, gvk := range gvks {
		rt := scheme.AllKnownTypes()[gvk]
		t.Kinds = append(t.Kinds, []any{gvk.GroupVersion().String(), gvk.Kind, t.ref(rt)})
	}
	writeJSON(filepath.Join(*out, "types.json"), t)
	vectors(scheme, gvks, *perKind, *seed, filepath.Join(*out, "vectors.json.gz"))
	quantities(*seed, filepath.Join(*out, "quantities.json"))
}

// quantities: resource.Quantity strings as a protobuf body carries them, and the JSON
// Go writes for each (ParseQuantity, then MarshalJSON: the canonical form, or the
// string itself where ParseQuantity keeps it), or null where Go refuses the string.
func quantities(seed int64, path string) {
	inputs := []string{"0", "1", "-1", "+1", "100m", "0.1", ".5", "5.", "1.5", "1000m", "1500m",
		"0.5Gi", "1024Mi", "1Ki", "1025Ki", "1023", "1024", "2048", "+1Ki", "01Ki", "0100m",
		"1e3", "1E3", "1e-3", "1.5e3", "1000E", "1E", "1P", "123456789012345678901234567890",
		"0.0000000001", "-0.0000000001", "1n", "1u", "1.5n", "0.5n", "12345678901234567890Ki",
		"9223372036854775807", "9223372036854775808", "1Ei", "8Ei", "16Ei", "-1Ki", "-1025",
		"100k", "1000k", "1M", "0.001k", "1.000", "10.0", "00", "-0", "+0", "0.0", "0m",
		"1e", "1Kib", "abc", "", ".", "-", "1e+", "1.2.3", "1 Gi", "1e100", "1e-100", "3.14159"}
	r := rand.New(rand.NewSource(seed))
	suffixes := []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-3", "E6", "e0", "e20", "x"}
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.Intn(10))
		}
		return string(b)
	}
	for range 3000 {
		q := []string{"", "", "", "-", "+"}[r.Intn(5)] + strings.Repeat("0", r.Intn(3)*r.Intn(2)) + digits(r.Intn(20))
		if r.Intn(3) == 0 {
			q += "." + digits(r.Intn(13))
		}
		inputs = append(inputs, q+suffixes[r.Intn(len(suffixes))])
	}
	var out [][]any
	for _, in := range inputs {
		q, err := resource.ParseQuantity(in)
		if err != nil {
			out = append(out, []any{in, nil})
			continue
		}
		j, err := json.Marshal(q)
		if err != nil {
			fail("%q: %v", in, err)
		}
		var s string
		if err := json.Unmarshal(j, &s); err != nil {
			fail("%q: %v", in, err)
		}
		out = append(out, []any{in, s})
	}
	raw, err := json.Marshal(out)
	if err != nil {
		fail("%v", err)
	}
	text := strings.ReplaceAll(string(raw), "],[", "],\n[")
	if err := os.WriteFile(path, []byte(text+"\n"), 0o644); err != nil {
		fail("%v", err)
	}
}

// version: the k8s.io/api module the types come from.
func version() string {
	raw, err := os.ReadFile("go.mod")
	if err != nil {
		fail("%v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "k8s.io/api" {
			return "k8s.io/api " + f[1]
		}
	}
	fail("go.mod requires no k8s.io/api")
	return ""
}

func writeJSON(path string, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fail("%v", err)
	}
	// One type a line: diffs between releases stay readable.
	text := strings.ReplaceAll(buf.String(), `{"name":`, "\n{\"name\":")
	text = strings.ReplaceAll(text, `],["`, "],\n[\"")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fail("%v", err)
	}
}

type vector struct {
	Kind     string          `json:"kind"`
	Protobuf string          `json:"protobuf"`
	JSON     json.RawMessage `json:"json,omitempty"`
	// Error: Go could decode the protobuf but not marshal the object to JSON (an
	// IntOrString of no known type, ...): the Rust decoder must refuse it too.
	Error string `json:"error,omitempty"`
}

// vectors: for each kind, perKind fuzzed objects as protobuf and as Go's JSON of the
// object decoded from that protobuf (what the apiserver reads from such a body).
func vectors(scheme *runtime.Scheme, gvks []schema.GroupVersionKind, perKind int, seed int64, path string) {
	codecs := serializer.NewCodecFactory(scheme)
	f := fuzzer.FuzzerFor(genericfuzzer.Funcs, rand.NewSource(seed), codecs)
	// JSONSchemaProps nests itself in a dozen fields: unbounded, one CRD would never end
	// (apiextensions' own fuzzer bounds it by hand, for its internal types).
	shallow := fuzzer.FuzzerFor(genericfuzzer.Funcs, rand.NewSource(seed), codecs).MaxDepth(7)
	// And one object per kind whose lists and maps hold two elements each (the fuzzer's
	// default is none or one), bounded in depth to stay small.
	wide := fuzzer.FuzzerFor(genericfuzzer.Funcs, rand.NewSource(seed), codecs).NumElements(2, 2).MaxDepth(9)
	pb := protobuf.NewSerializer(scheme, scheme)
	var lines [][]byte
	for _, gvk := range gvks {
		if skip[gvk.Kind] {
			continue
		}
		for i := range perKind + 1 {
			obj, err := scheme.New(gvk)
			if err != nil {
				fail("%v", err)
			}
			if i == perKind {
				wide.Fill(obj)
			} else if gvk.Group == apiextv1.GroupName {
				shallow.Fill(obj)
			} else {
				f.Fill(obj)
			}
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			var buf bytes.Buffer
			if err := pb.Encode(obj, &buf); err != nil {
				fail("%s: protobuf: %v", gvk, err)
			}
			back, _, err := pb.Decode(buf.Bytes(), &gvk, nil)
			if err != nil {
				fail("%s: decoding its own protobuf: %v", gvk, err)
			}
			back.GetObjectKind().SetGroupVersionKind(gvk)
			v := vector{Kind: gvk.GroupVersion().String() + " " + gvk.Kind, Protobuf: base64.StdEncoding.EncodeToString(buf.Bytes())}
			if j, err := json.Marshal(back); err != nil {
				v.Error = err.Error()
			} else {
				v.JSON = j
			}
			line, err := json.Marshal(v)
			if err != nil {
				fail("%v", err)
			}
			lines = append(lines, line)
		}
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(bytes.Join(lines, []byte("\n")))
	w.Close()
	if err := os.WriteFile(path, gz.Bytes(), 0o644); err != nil {
		fail("%v", err)
	}
	fmt.Fprintf(os.Stderr, "gen: %d kinds, %d vectors, %d bytes compressed\n", len(gvks), len(lines), gz.Len())
}

// skip: kinds the roundtrip tests skip too (apitesting/roundtrip globalNonRoundTrippableTypes):
// options only read from query parameters, and WatchEvent, which carries no kind.
var skip = map[string]bool{"ExportOptions": true, "GetOptions": true, "WatchEvent": true, "ListOptions": true}
