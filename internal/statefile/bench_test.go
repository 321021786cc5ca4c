package statefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchDoc returns a state of about size bytes made of resource instances.
func benchDoc(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":4,"terraform_version":"1.9.0","serial":7,"lineage":"bench","outputs":{"a":{"value":"x","type":"string"}},"resources":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"mode":"managed","type":"aws_instance","name":"web_%d","instances":[{"schema_version":1,"attributes":{"id":"i-%08x","cpu":2,"ratio":0.125,"on":true,"tags":{"Name":"web-%d"},"pad":"%s","list":[1,2,3,null]}}]}`, i, i, i, strings.Repeat("x", 100))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkReadSummary compares the streaming reader with decoding the same
// metadata through encoding/json from memory.
func BenchmarkReadSummary(b *testing.B) {
	doc := benchDoc(4 << 20)
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ReadSummary(bytes.NewReader(doc), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			var st struct {
				Version uint64 `json:"version"`
				Outputs map[string]struct {
					Type json.RawMessage `json:"type"`
				} `json:"outputs"`
			}
			if err := json.Unmarshal(doc, &st); err != nil {
				b.Fatal(err)
			}
		}
	})
}
