package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestForward(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr error
	}{
		{
			name: "Terraform's document: only the serial changes",
			in:   "{\n  \"version\": 4,\n  \"terraform_version\": \"1.5.7\",\n  \"serial\": 3,\n  \"lineage\": \"l\",\n  \"outputs\": {}\n}\n",
			want: "{\n  \"version\": 4,\n  \"terraform_version\": \"1.5.7\",\n  \"serial\": 42,\n  \"lineage\": \"l\",\n  \"outputs\": {}\n}\n",
		},
		{
			name: "compact, the serial last",
			in:   `{"version":4,"lineage":"l","serial":3}`,
			want: `{"version":4,"lineage":"l","serial":42}`,
		},
		{
			name: "serial keys and values below the top level stay",
			in:   `{"resources":[{"serial":1,"instances":[{"attributes":{"serial":"7"}}]}],"serial":3,"outputs":{"serial":{"value":5}}}`,
			want: `{"resources":[{"serial":1,"instances":[{"attributes":{"serial":"7"}}]}],"serial":42,"outputs":{"serial":{"value":5}}}`,
		},
		{
			name: "a top-level value that reads serial is no key",
			in:   `{"lineage":"serial","check":"\"serial\": 1, {","serial":3}`,
			want: `{"lineage":"serial","check":"\"serial\": 1, {","serial":42}`,
		},
		{
			name: "a key spelled with escapes is the serial too",
			in:   `{"\u0073erial":3}`,
			want: `{"\u0073erial":42}`,
		},
		{
			name: "a serial larger than a uint32",
			in:   `{"serial":4294967299,"lineage":"l"}`,
			want: `{"serial":42,"lineage":"l"}`,
		},
		{name: "no serial", in: `{"version":4,"lineage":"l"}`, wantErr: ErrNoSerial},
		{name: "a serial that is no number", in: `{"serial":null}`, wantErr: ErrNoSerial},
		{name: "a serial only below the top level", in: `{"outputs":{"serial":3}}`, wantErr: ErrNoSerial},
		{name: "a document that ends at the serial", in: `{"serial":`, wantErr: ErrNoSerial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Forward(&out, strings.NewReader(tt.in), 42)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Forward() = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Forward() = %v", err)
			}
			if out.String() != tt.want {
				t.Errorf("Forward() wrote\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
}

func TestForwardStreamsALargeState(t *testing.T) {
	resources := strings.Repeat(`{"type":"x","instances":[{"attributes":{"id":"a\"b{c}[d]","serial":1}}]},`, 100_000)
	in := `{"version":4,"serial":3,"lineage":"l","resources":[` + strings.TrimSuffix(resources, ",") + `]}`
	var out bytes.Buffer
	if err := Forward(&out, strings.NewReader(in), 1_000_000); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, `"serial":3,`, `"serial":1000000,`, 1)
	if out.String() != want {
		t.Errorf("the large state changed beyond its serial (%d bytes, want %d)", out.Len(), len(want))
	}
}

func FuzzForward(f *testing.F) {
	f.Add(`{"version":4,"serial":3,"lineage":"l"}`)
	f.Add(`{"a":"\\\"","serial":  7 ,"b":[{"serial":1}]}`)
	f.Add(`{"\u0073erial":1e3,"x":{"y":"}"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var doc map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &doc) != nil {
			return // only documents a state can be are checked
		}
		serial, hasSerial := doc["serial"]
		var out bytes.Buffer
		err := Forward(&out, strings.NewReader(in), 99)
		if !hasSerial || len(serial) == 0 || serial[0] < '0' || serial[0] > '9' {
			if err == nil {
				t.Fatalf("Forward(%q) accepted a document without a numeric serial", in)
			}
			return
		}
		if err != nil {
			t.Fatalf("Forward(%q) = %v", in, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("Forward(%q) wrote %q, which is no JSON object: %v", in, out.String(), err)
		}
		if string(got["serial"]) != "99" {
			t.Errorf("Forward(%q) wrote serial %s, want 99", in, got["serial"])
		}
		delete(got, "serial")
		delete(doc, "serial")
		if len(got) != len(doc) {
			t.Fatalf("Forward(%q) wrote %d other keys, want %d", in, len(got), len(doc))
		}
		for k, v := range doc {
			if !bytes.Equal(got[k], v) {
				t.Errorf("Forward(%q) changed %q from %s to %s", in, k, v, got[k])
			}
		}
	})
}
