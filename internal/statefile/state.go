package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// State is a state in format version 4 with its root module outputs.
// Resources and check results are not decoded.
type State struct {
	// Version is the format version, always SupportedVersion.
	Version int
	// TerraformVersion is the version of Terraform that last wrote the state.
	TerraformVersion string
	// Serial increases with every write of the state.
	Serial uint64
	// Lineage identifies the state across its writes.
	Lineage string
	// Outputs are the root module outputs by name.
	Outputs map[string]Output
}

// Output is one root module output.
type Output struct {
	// Value is the output value as raw JSON.
	Value json.RawMessage
	// Type is the output's Terraform type as compact JSON; see Kind.
	Type json.RawMessage
	// Sensitive reports whether the output is marked sensitive.
	Sensitive bool
}

// Kind returns the kind of the output's type.
func (o Output) Kind() (TypeKind, error) {
	return Kind(o.Type)
}

// stateV4 is the on-disk layout Parse decodes.
type stateV4 struct {
	Version          *uint64             `json:"version"`
	TerraformVersion string              `json:"terraform_version"`
	Serial           uint64              `json:"serial"`
	Lineage          string              `json:"lineage"`
	Outputs          map[string]outputV4 `json:"outputs"`
}

type outputV4 struct {
	Value     json.RawMessage `json:"value"`
	Type      json.RawMessage `json:"type"`
	Sensitive bool            `json:"sensitive"`
}

// Parse decodes a state in format version 4, keeping every output value as
// raw JSON. Empty data gives ErrNoState; malformed JSON, a format version
// other than 4 (ErrUnsupportedVersion) and an invalid output type are
// errors. Use ReadSummary when the values are not needed.
func Parse(data []byte) (*State, error) {
	if len(data) == 0 {
		return nil, ErrNoState
	}
	var raw stateV4
	if err := json.Unmarshal(data, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("reading state: invalid JSON at offset %d: %w", syn.Offset, err)
		}
		return nil, fmt.Errorf("reading state: %w", err)
	}
	if err := checkVersion(raw.Version); err != nil {
		return nil, err
	}
	st := &State{
		Version:          SupportedVersion,
		TerraformVersion: raw.TerraformVersion,
		Serial:           raw.Serial,
		Lineage:          raw.Lineage,
		Outputs:          make(map[string]Output, len(raw.Outputs)),
	}
	for name, o := range raw.Outputs {
		typ, err := compactType(name, nullToNil(o.Type))
		if err != nil {
			return nil, err
		}
		st.Outputs[name] = Output{Value: o.Value, Type: json.RawMessage(typ), Sensitive: o.Sensitive}
	}
	return st, nil
}

// Summary returns the state's metadata, as ReadSummary would.
func (st *State) Summary() Summary {
	sum := Summary{
		Serial:           st.Serial,
		Lineage:          st.Lineage,
		TerraformVersion: st.TerraformVersion,
		Outputs:          make([]OutputMeta, 0, len(st.Outputs)),
	}
	for name, o := range st.Outputs {
		sum.Outputs = append(sum.Outputs, OutputMeta{Name: name, Type: string(o.Type), Sensitive: o.Sensitive})
	}
	slices.SortFunc(sum.Outputs, func(a, b OutputMeta) int { return strings.Compare(a.Name, b.Name) })
	return sum
}

// nullToNil maps a JSON null to no value.
func nullToNil(raw json.RawMessage) []byte {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}
