package statefile

import (
	"errors"
	"io"
)

// SupportedVersion is the only state format version this package reads.
const SupportedVersion = 4

// ErrNoState is returned for an empty input: zero bytes, the way Terraform's
// http backend signals that no state exists. Whitespace alone is malformed.
var ErrNoState = errors.New("statefile: no state")

// ErrUnsupportedVersion is wrapped by the error returned for a state whose
// format version is missing or is not SupportedVersion.
var ErrUnsupportedVersion = errors.New("unsupported state format version")

// Summary is the metadata of a state: everything a probe reports, and
// nothing per output, so that its size does not depend on the state.
type Summary struct {
	// Serial increases with every write of the state.
	Serial uint64
	// Lineage identifies the state across its writes.
	Lineage string
	// TerraformVersion is the version of Terraform that last wrote the state.
	TerraformVersion string
	// OutputCount is the number of root module outputs. An output name
	// repeated in the document (which Terraform never writes) counts twice.
	OutputCount int
	// Encrypted reports a state encrypted with OpenTofu's state
	// encryption. Unless it was decrypted, only Serial and Lineage are
	// known.
	Encrypted bool
}

// ReadSummary reads a state in format version 4 from r and returns its
// metadata. It streams: output values, resources and every other field are
// validated and skipped without being kept, and outputs are only counted,
// so its memory does not depend on the size of the state or on the number
// of its outputs. It reads r to the end and rejects trailing data.
//
// An encrypted state (OpenTofu's envelope) is decrypted with dec, within
// its bounds, and summarized with Encrypted set; with a nil dec its payload
// is skipped and only its serial and lineage are known.
//
// An empty r gives ErrNoState. Malformed JSON, a wrong field type, a format
// version other than 4 (ErrUnsupportedVersion), an invalid output type and a
// lineage or Terraform version longer than 1024 bytes are errors, and so is
// an encrypted state dec cannot open (ErrDecrypt). Errors never quote the
// input, but for the key provider names dec's errors may give.
func ReadSummary(r io.Reader, dec *Decryption) (Summary, error) {
	st, err := readOutputs(r, Options{Want: func(string) bool { return false }, Decryption: dec})
	if err != nil {
		return Summary{}, err
	}
	return st.Summary(), nil
}
