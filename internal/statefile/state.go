package statefile

import "encoding/json"

// State is a state in format version 4 with its root module outputs.
// Resources and check results are not kept.
type State struct {
	// Version is the format version, always SupportedVersion.
	Version int
	// TerraformVersion is the version of Terraform that last wrote the state.
	TerraformVersion string
	// Serial increases with every write of the state.
	Serial uint64
	// Lineage identifies the state across its writes.
	Lineage string
	// Outputs are the root module outputs that were kept, by name.
	Outputs map[string]Output
	// OutputCount is the number of outputs in the state, kept or not.
	OutputCount int
	// Encrypted reports a state encrypted with OpenTofu's state
	// encryption, which was decrypted to read the rest.
	Encrypted bool
}

// Output is one root module output.
type Output struct {
	// Value is the output value as compact JSON.
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

// Summary returns the state's metadata, as ReadSummary would.
func (st *State) Summary() Summary {
	return Summary{
		Serial:           st.Serial,
		Lineage:          st.Lineage,
		TerraformVersion: st.TerraformVersion,
		OutputCount:      st.OutputCount,
		Encrypted:        st.Encrypted,
	}
}
