package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// fullState is a state as Terraform 1.x writes it, with every output shape.
const fullState = `{
  "version": 4,
  "terraform_version": "1.5.7",
  "serial": 42,
  "lineage": "3f0a3c51-6f9b-2c8e-1d2a-9b7c6e5d4f3a",
  "outputs": {
    "str": {"value": "hello \"world\" \u00e9", "type": "string"},
    "num": {"value": 1.5e3, "type": "number"},
    "flag": {"value": false, "type": "bool"},
    "dyn": {"value": null, "type": "dynamic"},
    "names": {"value": ["a", "b"], "type": ["list", "string"]},
    "ids": {"value": [1, 2], "type": [ "set", "number" ]},
    "tags": {"value": {"env": "prod"}, "type": ["map", "string"]},
    "obj": {"value": {"a": 1, "b": ["x"]}, "type": ["object", {"a": "number", "b": ["list", "string"]}]},
    "tup": {"value": ["a", 1, true], "type": ["tuple", ["string", "number", "bool"]]},
    "secret": {"value": "hunter2", "type": "string", "sensitive": true},
    "nested": {"value": [{"k": {"x": "y"}}], "type": ["list", ["object", {"k": ["map", "string"]}]]}
  },
  "resources": [
    {"mode": "managed", "type": "null_resource", "name": "n", "provider": "provider[\"registry.terraform.io/hashicorp/null\"]",
     "instances": [{"schema_version": 0, "attributes": {"id": "1", "triggers": null}, "sensitive_attributes": []}]}
  ],
  "check_results": null
}
`

func fullSummary() Summary {
	return Summary{
		Serial:           42,
		Lineage:          "3f0a3c51-6f9b-2c8e-1d2a-9b7c6e5d4f3a",
		TerraformVersion: "1.5.7",
		OutputCount:      11,
	}
}

// summaryCases are shared by ReadSummary and ReadOutputs: both must agree.
var summaryCases = map[string]struct {
	in      string
	want    Summary
	wantErr string // substring; empty means success
	is      error  // errors.Is target when set
}{
	"full state":       {in: fullState, want: fullSummary()},
	"minimal":          {in: `{"version":4}`, want: Summary{}},
	"no outputs":       {in: `{"version":4,"serial":1,"lineage":"l","outputs":{}}`, want: Summary{Serial: 1, Lineage: "l"}},
	"null fields":      {in: `{"version":4,"serial":null,"lineage":null,"terraform_version":null,"outputs":null}`, want: Summary{}},
	"keys fold case":   {in: `{"Version":4,"SERIAL":7,"Lineage":"x"}`, want: Summary{Serial: 7, Lineage: "x"}},
	"version last":     {in: `{"serial":3,"outputs":{"a":{"value":1,"type":"number"}},"version":4}`, want: Summary{Serial: 3, OutputCount: 1}},
	"max serial":       {in: `{"version":4,"serial":18446744073709551615}`, want: Summary{Serial: 18446744073709551615}},
	"sensitive false":  {in: `{"version":4,"outputs":{"a":{"value":"x","type":"string","sensitive":false}}}`, want: Summary{OutputCount: 1}},
	"sensitive null":   {in: `{"version":4,"outputs":{"a":{"type":"string","sensitive":true,"sensitive":null}}}`, want: Summary{OutputCount: 1}},
	"object optional":  {in: `{"version":4,"outputs":{"o":{"value":{},"type":["object",{"a":"string"},["a"]]}}}`, want: Summary{OutputCount: 1}},
	"escaped key":      {in: `{"version":4,"outputs":{"a\u0062":{"value":1,"type":"number"}}}`, want: Summary{OutputCount: 1}},
	"trailing spaces":  {in: "{\"version\":4}\n\t ", want: Summary{}},
	"empty":            {in: ``, wantErr: "no state", is: ErrNoState},
	"whitespace only":  {in: "  \n", wantErr: "invalid JSON"},
	"truncated":        {in: `{"version":4,"outputs":{"a":{"value":[1,2`, wantErr: "invalid JSON"},
	"not an object":    {in: `[4]`, wantErr: "reading state"},
	"trailing data":    {in: `{"version":4} {}`, wantErr: "invalid JSON"},
	"bad literal":      {in: `{"version":4,"x":tru}`, wantErr: "invalid"},
	"bad number":       {in: `{"version":4,"x":01}`, wantErr: "invalid"},
	"bad escape":       {in: `{"version":4,"x":"\q"}`, wantErr: "invalid"},
	"control char":     {in: "{\"version\":4,\"x\":\"a\nb\"}", wantErr: "invalid"},
	"missing colon":    {in: `{"version" 4}`, wantErr: "invalid"},
	"trailing comma":   {in: `{"version":4,}`, wantErr: "invalid"},
	"version 3":        {in: `{"version":3,"serial":1,"modules":[]}`, wantErr: "unsupported state format version 3", is: ErrUnsupportedVersion},
	"version 5":        {in: `{"version":5}`, wantErr: "version 5", is: ErrUnsupportedVersion},
	"no version":       {in: `{"serial":1}`, wantErr: "has no version", is: ErrUnsupportedVersion},
	"version string":   {in: `{"version":"4"}`, wantErr: "version"},
	"version float":    {in: `{"version":4.0}`, wantErr: "version"},
	"negative serial":  {in: `{"version":4,"serial":-1}`, wantErr: "serial"},
	"serial overflow":  {in: `{"version":4,"serial":18446744073709551616}`, wantErr: "serial"},
	"lineage number":   {in: `{"version":4,"lineage":5}`, wantErr: "lineage"},
	"outputs array":    {in: `{"version":4,"outputs":[]}`, wantErr: "reading state"},
	"output no type":   {in: `{"version":4,"outputs":{"a":{"value":1}}}`, wantErr: `output 0 has no type`},
	"output null":      {in: `{"version":4,"outputs":{"a":null}}`, wantErr: `output 0 has no type`},
	"output null type": {in: `{"version":4,"outputs":{"b":{"value":1,"type":"number"},"a":{"value":1,"type":null}}}`, wantErr: `output 1 has no type`},
	"unknown type":     {in: `{"version":4,"outputs":{"a":{"value":1,"type":"int"}}}`, wantErr: `unknown primitive type`, is: ErrInvalidType},
	"sensitive string": {in: `{"version":4,"outputs":{"a":{"type":"string","sensitive":"yes"}}}`, wantErr: "sensitive"},
}

func TestReadSummary(t *testing.T) {
	for name, tc := range summaryCases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadSummary(strings.NewReader(tc.in), nil)
			checkErr(t, err, tc.wantErr, tc.is)
			if tc.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadSummary() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadOutputsSummary runs summaryCases through ReadOutputs keeping
// every output: the walker's capturing mode must accept and refuse what its
// skipping mode (ReadSummary) does, and report the same metadata.
func TestReadOutputsSummary(t *testing.T) {
	for name, tc := range summaryCases {
		t.Run(name, func(t *testing.T) {
			st, err := ReadOutputs(strings.NewReader(tc.in), Options{})
			checkErr(t, err, tc.wantErr, tc.is)
			if tc.wantErr != "" {
				return
			}
			if st.Version != SupportedVersion {
				t.Errorf("Version = %d, want %d", st.Version, SupportedVersion)
			}
			if diff := cmp.Diff(tc.want, st.Summary()); diff != "" {
				t.Errorf("ReadOutputs().Summary() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, wantErr string, is error) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("expected an error containing %q, got none", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Fatalf("error %q does not contain %q", err, wantErr)
	case is != nil && !errors.Is(err, is):
		t.Fatalf("error %q is not %v", err, is)
	}
}

// TestReadOutputsKeepsEveryShape reads fullState keeping every output and
// checks each value and type as kept: compact JSON, escapes as written.
func TestReadOutputsKeepsEveryShape(t *testing.T) {
	st, err := ReadOutputs(strings.NewReader(fullState), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		value     string
		typ       string
		kind      TypeKind
		sensitive bool
	}{
		"str":    {value: `"hello \"world\" \u00e9"`, typ: `"string"`, kind: KindString},
		"num":    {value: `1.5e3`, typ: `"number"`, kind: KindNumber},
		"flag":   {value: `false`, typ: `"bool"`, kind: KindBool},
		"dyn":    {value: `null`, typ: `"dynamic"`, kind: KindDynamic},
		"names":  {value: `["a","b"]`, typ: `["list","string"]`, kind: KindList},
		"ids":    {value: `[1,2]`, typ: `["set","number"]`, kind: KindList},
		"tags":   {value: `{"env":"prod"}`, typ: `["map","string"]`, kind: KindMap},
		"obj":    {value: `{"a":1,"b":["x"]}`, typ: `["object",{"a":"number","b":["list","string"]}]`, kind: KindObject},
		"tup":    {value: `["a",1,true]`, typ: `["tuple",["string","number","bool"]]`, kind: KindList},
		"secret": {value: `"hunter2"`, typ: `"string"`, kind: KindString, sensitive: true},
		"nested": {value: `[{"k":{"x":"y"}}]`, typ: `["list",["object",{"k":["map","string"]}]]`, kind: KindList},
	}
	if len(st.Outputs) != len(cases) {
		t.Errorf("got %d outputs, want %d", len(st.Outputs), len(cases))
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, ok := st.Outputs[name]
			if !ok {
				t.Fatalf("output %q missing", name)
			}
			want := Output{Value: json.RawMessage(tc.value), Type: json.RawMessage(tc.typ), Sensitive: tc.sensitive}
			if diff := cmp.Diff(want, o, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
			kind, err := o.Kind()
			if err != nil {
				t.Fatal(err)
			}
			if kind != tc.kind {
				t.Errorf("Kind() = %q, want %q", kind, tc.kind)
			}
		})
	}
}

func TestKind(t *testing.T) {
	cases := map[string]struct {
		typ     string
		want    TypeKind
		wantErr string
	}{
		"string":            {typ: `"string"`, want: KindString},
		"number":            {typ: `"number"`, want: KindNumber},
		"bool":              {typ: `"bool"`, want: KindBool},
		"dynamic":           {typ: `"dynamic"`, want: KindDynamic},
		"list":              {typ: `["list","string"]`, want: KindList},
		"set":               {typ: `["set","number"]`, want: KindList},
		"tuple":             {typ: `["tuple",["string",["list","bool"]]]`, want: KindList},
		"empty tuple":       {typ: `["tuple",[]]`, want: KindList},
		"map":               {typ: `["map",["object",{"a":"string"}]]`, want: KindMap},
		"object":            {typ: `["object",{"a":"string","b":["set","dynamic"]}]`, want: KindObject},
		"empty object":      {typ: `["object",{}]`, want: KindObject},
		"object optional":   {typ: `["object",{"a":"string"},["a"]]`, want: KindObject},
		"list of dynamic":   {typ: ` [ "list" , "dynamic" ] `, want: KindList},
		"empty":             {typ: ``, wantErr: "empty"},
		"null":              {typ: `null`, wantErr: "not null"},
		"number literal":    {typ: `4`, wantErr: "not a number"},
		"unknown primitive": {typ: `"int"`, wantErr: `unknown primitive type`},
		"unknown complex":   {typ: `["array","string"]`, wantErr: `unknown complex type`},
		"list no element":   {typ: `["list"]`, wantErr: "needs a kind and an element type"},
		"list two elements": {typ: `["list","string","number"]`, wantErr: "has 3 elements"},
		"bad element":       {typ: `["map",["list","str"]]`, wantErr: `map element: list element: unknown primitive type`},
		"kind not string":   {typ: `[1,"string"]`, wantErr: "must be a string"},
		"tuple not list":    {typ: `["tuple","string"]`, wantErr: "tuple type must be"},
		"bad tuple element": {typ: `["tuple",["string",7]]`, wantErr: "tuple element 1"},
		"object not object": {typ: `["object",["a"]]`, wantErr: "object type must be"},
		"bad attribute":     {typ: `["object",{"a":"x"}]`, wantErr: `object attribute: unknown primitive type`},
		"bad optional":      {typ: `["object",{"a":"string"},["b"]]`, wantErr: `an optional attribute is not an attribute of the object`},
		"optional not list": {typ: `["object",{"a":"string"},"a"]`, wantErr: "list of names"},
		"malformed":         {typ: `["list",`, wantErr: "invalid output type"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Kind(json.RawMessage(tc.typ))
			checkErr(t, err, tc.wantErr, nil)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidType) {
					t.Errorf("error %q is not ErrInvalidType", err)
				}
				return
			}
			if got != tc.want {
				t.Errorf("Kind(%s) = %q, want %q", tc.typ, got, tc.want)
			}
		})
	}
}

// repeatReader yields n copies of b without holding them in memory.
type repeatReader struct {
	b []byte
	n int64 // bytes left
	i int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	for k := range p {
		p[k] = r.b[r.i]
		r.i = (r.i + 1) % len(r.b)
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// TestReadSummaryIgnoresHugeValues streams a 48 MiB state (a 16 MiB string
// output, a 16 MiB list output and 16 MiB of resources) and checks that
// ReadSummary allocates a small, constant amount: values are never kept.
func TestReadSummaryIgnoresHugeValues(t *testing.T) {
	const size = 16 << 20
	elem := []byte(`{"k":[1,2.5e-3,true,null,"\u00e9\"x"]},`)
	in := io.MultiReader(
		strings.NewReader(`{"version":4,"serial":9,"lineage":"big","outputs":{"blob":{"sensitive":true,"value":"`),
		&repeatReader{b: []byte(`abcdefgh\"\\\u00e9 `), n: size / 20 * 20},
		strings.NewReader(`","type":"string"},"list":{"value":[`),
		&repeatReader{b: elem, n: size / int64(len(elem)) * int64(len(elem))},
		strings.NewReader(`0],"type":["list","dynamic"]}},"resources":[`),
		&repeatReader{b: elem, n: size / int64(len(elem)) * int64(len(elem))},
		strings.NewReader(`{}]}`),
	)
	var (
		got Summary
		err error
	)
	alloc := testtools.AllocatedBy(func() { got, err = ReadSummary(in, nil) })
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Serial: 9, Lineage: "big", OutputCount: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadSummary() mismatch (-want +got):\n%s", diff)
	}
	// 48 MiB streamed; the read buffer and metadata need well under 1 MiB.
	if alloc > 1<<20 {
		t.Errorf("ReadSummary allocated %d bytes for a %d-byte state; values must not be kept", alloc, 3*size)
	}
}

// TestReadSummaryReadError checks that a failing reader's error is wrapped.
func TestReadSummaryReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadSummary(io.MultiReader(strings.NewReader(`{"version":4,`), &errReader{boom}), nil)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v does not wrap the read error", err)
	}
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

// FuzzReadSummary checks the walker on every input. ReadSummary and
// ReadOutputs are two modes of one walker, so their agreement is not a
// comparison of two parsers; the test is kept because what it checks still
// differs between the modes and can still fail:
//
//   - Neither panics, and neither allocates more than a fixed amount plus a
//     small multiple of the input: no input makes the reader amplify
//     memory, whether it skips values (ReadSummary) or captures them
//     (ReadOutputs keeping every output).
//   - Both accept and refuse the same inputs and report the same metadata:
//     skipping a value (scanner.value with no sink) and capturing it (with
//     a sink, whose writes can fail) are separate paths through the token
//     readers, and must validate alike.
//   - What they accept is valid JSON by encoding/json's account, and every
//     kept value (when the output has one) and type is compact JSON: the
//     walker's grammar must not be looser than the standard library's, and
//     a capture must hold the whole value and nothing else.
func FuzzReadSummary(f *testing.F) {
	for _, tc := range summaryCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bound := uint64(128<<10 + 8*len(data))
		var sum Summary
		var err error
		if alloc := testtools.AllocatedBy(func() { sum, err = ReadSummary(bytes.NewReader(data), nil) }); alloc > bound {
			t.Fatalf("ReadSummary allocated %d bytes for %d bytes of input, more than %d", alloc, len(data), bound)
		}
		var st *State
		var serr error
		if alloc := testtools.AllocatedBy(func() { st, serr = ReadOutputs(bytes.NewReader(data), Options{}) }); alloc > bound+uint64(2*len(data)) {
			t.Fatalf("ReadOutputs allocated %d bytes for %d bytes of input", alloc, len(data))
		}
		if (err == nil) != (serr == nil) {
			t.Fatalf("ReadSummary error %v, ReadOutputs error %v", err, serr)
		}
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatal("the walker accepted input that encoding/json finds invalid")
		}
		if diff := cmp.Diff(st.Summary(), sum); diff != "" {
			t.Fatalf("summaries differ (-ReadOutputs +ReadSummary):\n%s", diff)
		}
		for name, o := range st.Outputs {
			for what, raw := range map[string][]byte{"value": o.Value, "type": o.Type} {
				if what == "value" && o.Value == nil {
					continue // the output has no value field
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, raw); err != nil || !bytes.Equal(compact.Bytes(), raw) {
					t.Fatalf("output %q: the kept %s %q is not compact JSON (%v)", name, what, raw, err)
				}
			}
		}
	})
}
