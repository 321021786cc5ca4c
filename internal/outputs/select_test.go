package outputs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// everyShape is a state with one output of every type shape Terraform
// records.
const everyShape = `{
  "version": 4, "terraform_version": "1.5.7", "serial": 4, "lineage": "l",
  "outputs": {
    "s":   {"value": "vpc-123", "type": "string"},
    "n":   {"value": 3.5, "type": "number"},
    "b":   {"value": true, "type": "bool"},
    "l":   {"value": ["a", "b"], "type": ["list", "string"]},
    "set": {"value": [1, 2], "type": ["set", "number"]},
    "m":   {"value": {"k": "v"}, "type": ["map", "string"]},
    "o":   {"value": {"name": "db", "port": 5432}, "type": ["object", {"name": "string", "port": "number"}]},
    "t":   {"value": ["x", 1, false], "type": ["tuple", ["string", "number", "bool"]]},
    "d":   {"value": {"any": [1]}, "type": "dynamic"},
    "pw":  {"value": "hunter2", "type": "string", "sensitive": true},
    "multi": {"value": "line one\nline \"two\"", "type": "string"}
  },
  "resources": []
}`

// mustReadState reads doc with the walker every caller uses, keeping every
// output.
func mustReadState(t *testing.T, doc string) *statefile.State {
	t.Helper()
	st, err := statefile.ReadOutputs(strings.NewReader(doc), statefile.Options{})
	if err != nil {
		t.Fatalf("reading state: %v", err)
	}
	return st
}

func TestSelectEveryShape(t *testing.T) {
	st := mustReadState(t, everyShape)
	got, err := Select(st, nil, nil)
	if err != nil {
		t.Fatalf("Select() error = %v", err)
	}
	want := []Value{
		{Name: "b", Key: "b", Type: `"bool"`, Data: []byte("true")},
		{Name: "d", Key: "d", Type: `"dynamic"`, Data: []byte(`{"any":[1]}`)},
		{Name: "l", Key: "l", Type: `["list","string"]`, Data: []byte(`["a","b"]`)},
		{Name: "m", Key: "m", Type: `["map","string"]`, Data: []byte(`{"k":"v"}`)},
		{Name: "multi", Key: "multi", Type: `"string"`, Data: []byte("line one\nline \"two\"")},
		{Name: "n", Key: "n", Type: `"number"`, Data: []byte("3.5")},
		{Name: "o", Key: "o", Type: `["object",{"name":"string","port":"number"}]`, Data: []byte(`{"name":"db","port":5432}`)},
		{Name: "pw", Key: "pw", Type: `"string"`, Sensitive: true, Data: []byte("hunter2")},
		{Name: "s", Key: "s", Type: `"string"`, Data: []byte("vpc-123")},
		{Name: "set", Key: "set", Type: `["set","number"]`, Data: []byte("[1,2]")},
		{Name: "t", Key: "t", Type: `["tuple",["string","number","bool"]]`, Data: []byte(`["x",1,false]`)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Select() mismatch (-want +got):\n%s", diff)
	}
}

func TestSelectTypes(t *testing.T) {
	st := mustReadState(t, everyShape)
	cases := map[string]struct {
		name, typ string
		wantErr   string
	}{
		"string":                {name: "s", typ: TypeString},
		"number":                {name: "n", typ: TypeNumber},
		"bool":                  {name: "b", typ: TypeBool},
		"list":                  {name: "l", typ: TypeList},
		"a set is a list":       {name: "set", typ: TypeList},
		"a tuple is a list":     {name: "t", typ: TypeList},
		"map":                   {name: "m", typ: TypeMap},
		"an object is a map":    {name: "o", typ: TypeMap},
		"object":                {name: "o", typ: TypeObject},
		"a dynamic object":      {name: "d", typ: TypeObject},
		"any takes anything":    {name: "t", typ: TypeAny},
		"empty means any":       {name: "o", typ: ""},
		"a number is no string": {name: "n", typ: TypeString, wantErr: `output "n" is a number, not a string`},
		"a list is no map":      {name: "l", typ: TypeMap, wantErr: `output "l" is a list, not a map`},
		"a string is no bool":   {name: "pw", typ: TypeBool, wantErr: `output "pw" is a string, not a bool`},
		"a map is no list":      {name: "m", typ: TypeList, wantErr: `output "m" is a map, not a list`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Select(st, nil, []Selector{{Name: tc.name, Type: tc.typ}})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Select() error = %v", err)
				}
				return
			}
			var mismatch *TypeMismatchError
			if !errors.As(err, &mismatch) || err.Error() != tc.wantErr {
				t.Fatalf("Select() error = %v, want a TypeMismatchError %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks a sensitive value: %v", err)
			}
		})
	}
}

func TestSelectDefaultsAndRenames(t *testing.T) {
	st := mustReadState(t, `{"version":4,"serial":1,"lineage":"l","outputs":{"vpc_id":{"value":"vpc-remote","type":"string"}}}`)
	defaults := map[string]json.RawMessage{
		"vpc_id":   json.RawMessage(`"vpc-default"`),
		"region":   json.RawMessage(`"ap-guangzhou"`),
		"zones":    json.RawMessage(` [ "a", "b" ] `),
		"bad name": json.RawMessage(`1`),
	}
	cases := map[string]struct {
		selectors []Selector
		want      []Value
		wantErr   string
	}{
		"remote values win, defaults fill the rest": {
			selectors: []Selector{{Name: "region"}, {Name: "vpc_id"}, {Name: "zones"}},
			want: []Value{
				{Name: "region", Key: "region", Type: DefaultType, Data: []byte("ap-guangzhou")},
				{Name: "vpc_id", Key: "vpc_id", Type: `"string"`, Data: []byte("vpc-remote")},
				{Name: "zones", Key: "zones", Type: DefaultType, Data: []byte(`["a","b"]`)},
			},
		},
		"selected and renamed, in the selector order": {
			selectors: []Selector{{Name: "zones", Type: TypeList, Key: "ZONES"}, {Name: "vpc_id", Key: "VPC_ID"}},
			want: []Value{
				{Name: "zones", Key: "ZONES", Type: DefaultType, Data: []byte(`["a","b"]`)},
				{Name: "vpc_id", Key: "VPC_ID", Type: `"string"`, Data: []byte("vpc-remote")},
			},
		},
		"a default is type-checked by its value": {
			selectors: []Selector{{Name: "region", Type: TypeNumber}},
			wantErr:   `output "region" is a string, not a number`,
		},
		"a default whose name is no valid key": {
			selectors: []Selector{{Name: "bad name"}},
			wantErr:   `output "bad name" cannot be published: "bad name" is not a valid ConfigMap or Secret key (letters, digits, '-', '_' and '.', at most 253 characters, not '.' or '..')`,
		},
		"a missing output": {
			selectors: []Selector{{Name: "subnet_ids"}},
			wantErr:   `output "subnet_ids" is not in the state and has no default`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Select(st, defaults, tc.selectors)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Select() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Select() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Select() mismatch (-want +got):\n%s", diff)
			}
		})
	}

	var missing *MissingError
	if _, err := Select(st, nil, []Selector{{Name: "nope"}}); !errors.As(err, &missing) || missing.Name != "nope" {
		t.Errorf("Select() of a missing output = %v, want a MissingError", err)
	}
	if _, err := Select(st, map[string]json.RawMessage{"bad": json.RawMessage(`{`)}, nil); !errors.Is(err, ErrInvalidDefault) {
		t.Errorf("Select() with a broken default = %v, want ErrInvalidDefault", err)
	}
}

func TestSplit(t *testing.T) {
	plain, sensitive := Split([]Value{
		{Key: "a", Data: []byte("1")},
		{Key: "pw", Sensitive: true, Data: []byte("hunter2")},
	})
	if diff := cmp.Diff(map[string]string{"a": "1"}, plain); diff != "" {
		t.Errorf("plain mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]byte{"pw": []byte("hunter2")}, sensitive); diff != "" {
		t.Errorf("sensitive mismatch (-want +got):\n%s", diff)
	}
}

func TestMalformedState(t *testing.T) {
	for name, doc := range map[string]string{
		"not JSON":      `{"version":4,`,
		"wrong version": `{"version":3,"serial":1,"outputs":{}}`,
		"bad type":      `{"version":4,"serial":1,"lineage":"l","outputs":{"x":{"value":1,"type":["frob","x"]}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			st, err := statefile.ReadOutputs(strings.NewReader(doc), statefile.Options{})
			if err == nil {
				_, err = Select(st, nil, nil)
			}
			if err == nil {
				t.Fatal("no error for a malformed state")
			}
		})
	}
}
