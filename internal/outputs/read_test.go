package outputs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// stateWith returns a v4 state document with the given outputs JSON.
func stateWith(outputs string) string {
	return `{"version":4,"terraform_version":"1.5.7","serial":2,"lineage":"l","outputs":{` + outputs + `}}`
}

// manyOutputs streams a state of n outputs o0..o(n-1) with value.
func manyOutputs(n int, value string, sensitive bool) io.Reader {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		s := ""
		if sensitive {
			s = `,"sensitive":true`
		}
		fmt.Fprintf(&b, `"o%d":{"value":%s,"type":"string"%s}`, i, value, s)
	}
	return strings.NewReader(stateWith(b.String()))
}

func TestRead(t *testing.T) {
	cases := map[string]struct {
		state     io.Reader
		defaults  map[string]json.RawMessage
		selectors []Selector
		want      []Value
		wantCount int
		wantErr   error
	}{
		"selected outputs only": {
			state:     strings.NewReader(stateWith(`"a":{"value":"x","type":"string"},"b":{"value":[1],"type":["list","number"]},"c":{"value":1,"type":"number"}`)),
			selectors: []Selector{{Name: "b", Key: "B"}},
			want:      []Value{{Name: "b", Key: "B", Type: `["list","number"]`, Data: []byte("[1]")}},
			wantCount: 3,
		},
		"defaults fill the rest": {
			state:     strings.NewReader(stateWith(`"a":{"value":"x","type":"string"}`)),
			defaults:  map[string]json.RawMessage{"region": json.RawMessage(`"ap-guangzhou"`)},
			want:      []Value{{Name: "a", Key: "a", Type: `"string"`, Data: []byte("x")}, {Name: "region", Key: "region", Type: DefaultType, Data: []byte("ap-guangzhou")}},
			wantCount: 1,
		},
		"1.7 million outputs are refused by count": {
			state:   manyOutputs(1_700_000, `""`, false),
			wantErr: statefile.ErrOutputsTooLarge,
		},
		"plain outputs larger than a ConfigMap": {
			state:   manyOutputs(2000, `"`+strings.Repeat("v", 600)+`"`, false),
			wantErr: ErrTooLarge,
		},
		"sensitive outputs larger than a Secret": {
			state:   manyOutputs(2000, `"`+strings.Repeat("v", 600)+`"`, true),
			wantErr: ErrTooLarge,
		},
		"selected outputs that fit, in a huge state": {
			state:     manyOutputs(200_000, `"`+strings.Repeat("v", 100)+`"`, false),
			selectors: []Selector{{Name: "o7"}},
			want:      []Value{{Name: "o7", Key: "o7", Type: `"string"`, Data: []byte(strings.Repeat("v", 100))}},
			wantCount: 200_000,
		},
		"escapes that fit once decoded": {
			state:     strings.NewReader(stateWith(`"html":{"value":"` + strings.Repeat(`\u003c`, 200<<10) + `","type":"string"}`)),
			want:      []Value{{Name: "html", Key: "html", Type: `"string"`, Data: []byte(strings.Repeat("<", 200<<10))}},
			wantCount: 1,
		},
		"defaults that push the ConfigMap over its size": {
			state:    strings.NewReader(stateWith(`"a":{"value":"` + strings.Repeat("a", 600_000) + `","type":"string"}`)),
			defaults: map[string]json.RawMessage{"b": json.RawMessage(`"` + strings.Repeat("b", 600_000) + `"`)},
			wantErr:  ErrTooLarge,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st, got, err := Read(tc.state, nil, tc.defaults, tc.selectors)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Read() error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Read() mismatch (-want +got):\n%s", diff)
			}
			if st.OutputCount != tc.wantCount {
				t.Errorf("OutputCount = %d, want %d", st.OutputCount, tc.wantCount)
			}
		})
	}
}

// TestKeysAreConfigMapKeys checks keys as the API server checks ConfigMap
// and Secret keys: "." and ".." were accepted, and then refused by the API
// server on every write.
func TestKeysAreConfigMapKeys(t *testing.T) {
	st := mustReadState(t, stateWith(`".":{"value":"x","type":"string"},"..":{"value":"y","type":"string"},"ok":{"value":"z","type":"string"}`))
	cases := map[string][]Selector{
		"an output named .":         {{Name: "."}},
		"an output named ..":        {{Name: ".."}},
		"a rename to ..":            {{Name: "ok", Key: ".."}},
		"a key longer than 253":     {{Name: "ok", Key: strings.Repeat("k", 254)}},
		"every output, one is '..'": nil,
	}
	for name, selectors := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Select(st, nil, selectors)
			if _, ok := errors.AsType[*KeyError](err); !ok {
				t.Fatalf("Select() error = %v, want a KeyError", err)
			}
		})
	}
}

func TestCheckDefaults(t *testing.T) {
	nested := func(depth int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
	}
	list := func(n int) json.RawMessage {
		items := make([]string, n)
		for i := range items {
			items[i] = `"x"`
		}
		return json.RawMessage("[" + strings.Join(items, ",") + "]")
	}
	cases := map[string]struct {
		defaults map[string]json.RawMessage
		wantErr  string
	}{
		"none":                 {},
		"scalars":              {defaults: map[string]json.RawMessage{"a": json.RawMessage(`"x"`), "b": json.RawMessage(`1.5`), "c": json.RawMessage(`null`), "d": json.RawMessage(`true`)}},
		"two levels":           {defaults: map[string]json.RawMessage{"subnets": json.RawMessage(`{"a":{"id":"x"},"b":["y",1]}`)}},
		"64 members":           {defaults: map[string]json.RawMessage{"zones": list(64)}},
		"three levels":         {defaults: map[string]json.RawMessage{"deep": nested(3)}, wantErr: `the value of "deep" must nest at most two levels`},
		"9000 levels":          {defaults: map[string]json.RawMessage{"deep": nested(9000)}, wantErr: `the value of "deep" must nest at most two levels`},
		"65 members":           {defaults: map[string]json.RawMessage{"zones": list(65)}, wantErr: `the value of "zones" must nest at most two levels`},
		"a long string":        {defaults: map[string]json.RawMessage{"s": json.RawMessage(`"` + strings.Repeat("é", 32768) + `x"`)}, wantErr: `the value of "s"`},
		"a key with a slash":   {defaults: map[string]json.RawMessage{"a/b": json.RawMessage(`1`)}, wantErr: `"a/b" is not a valid ConfigMap key`},
		"a key ..":             {defaults: map[string]json.RawMessage{"..": json.RawMessage(`1`)}, wantErr: `".." is not a valid ConfigMap key`},
		"128 KiB":              {defaults: bigDefaults(2, 65534)}, // names d0, d1 count too
		"more than 128 KiB":    {defaults: bigDefaults(2, 65535), wantErr: "the values total 131074 bytes, at most 131072 are allowed"},
		"not JSON":             {defaults: map[string]json.RawMessage{"a": json.RawMessage(`{`)}, wantErr: `the value of "a" is not JSON`},
		"multibyte at the cap": {defaults: map[string]json.RawMessage{"s": json.RawMessage(`"` + strings.Repeat("é", 32768) + `"`)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckDefaults(tc.defaults)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckDefaults() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidDefault) {
				t.Fatalf("CheckDefaults() = %v, want ErrInvalidDefault containing %q", err, tc.wantErr)
			}
		})
	}
}

func bigDefaults(n, size int) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for i := range n {
		out[fmt.Sprintf("d%d", i)] = json.RawMessage(`"` + strings.Repeat("v", size) + `"`)
	}
	return out
}
