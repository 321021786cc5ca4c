package stateencryption

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
)

// Bounds of the pbkdf2 parameters a state's meta may carry. The meta comes
// from the state server, so everything in it is bounded before any work
// depends on it.
const (
	// MinIterations is OpenTofu's own minimum number of PBKDF2
	// iterations: it refuses to configure fewer.
	MinIterations = 200_000
	// MaxIterations keeps a hostile state server from making the manager
	// derive for minutes: OpenTofu's default is 600,000.
	MaxIterations = 2_000_000
	// MaxSaltLength is the longest salt accepted, in bytes (OpenTofu's
	// default is 32).
	MaxSaltLength = 1024
	// maxParamsSize bounds the parameter document before it is parsed:
	// the base64 of a MaxSaltLength salt and the other fields fit easily.
	maxParamsSize = 4096
)

// AES-GCM sizes of OpenTofu's aes_gcm method: the standard nonce, which
// prefixes the ciphertext, and the standard tag, which ends it.
const (
	nonceSize = 12
	tagSize   = 16
)

// hashFunctions are the PBKDF2 pseudorandom functions OpenTofu's pbkdf2
// key provider knows, by the name its meta gives them.
var hashFunctions = map[string]func() hash.Hash{
	"sha256": sha256.New,
	"sha512": sha512.New,
}

// params are the parameters the pbkdf2 key provider records in a state's
// meta for the key of its payload. The JSON field names are OpenTofu's
// (keyprovider/pbkdf2 Metadata); salt is base64 in the document.
type params struct {
	// Salt is the random salt of this write: each write has a new one.
	Salt []byte `json:"salt"`
	// Iterations is the PBKDF2 iteration count.
	Iterations int `json:"iterations"`
	// HashFunction is "sha256" or "sha512".
	HashFunction string `json:"hash_function"`
	// KeyLength is the AES key length in bytes: 16, 24 or 32.
	KeyLength int `json:"key_length"`
}

// parseParams decodes the JSON parameter document of a meta value and
// checks it against the bounds; its errors wrap ErrInvalidParameters and
// quote no part of the document.
func parseParams(doc []byte) (params, error) {
	var p params
	if len(doc) > maxParamsSize {
		return p, fmt.Errorf("%w: the parameter document has %d bytes, more than %d", ErrInvalidParameters, len(doc), maxParamsSize)
	}
	if err := json.Unmarshal(doc, &p); err != nil {
		return p, fmt.Errorf("%w: the parameter document is not valid: %w", ErrInvalidParameters, jsonError(err))
	}
	if bytes.Equal(bytes.TrimSpace(doc), []byte("null")) {
		return p, fmt.Errorf("%w: the parameter document is null", ErrInvalidParameters)
	}
	return p, p.validate()
}

// validate checks p against the bounds; its errors wrap
// ErrInvalidParameters.
func (p params) validate() error {
	switch {
	case p.Iterations < MinIterations || p.Iterations > MaxIterations:
		return fmt.Errorf("%w: iterations %d not within [%d, %d]", ErrInvalidParameters, p.Iterations, MinIterations, MaxIterations)
	case hashFunctions[p.HashFunction] == nil:
		return fmt.Errorf("%w: hash_function %q is neither sha256 nor sha512", ErrInvalidParameters, clip(p.HashFunction))
	case p.KeyLength != 16 && p.KeyLength != 24 && p.KeyLength != 32:
		return fmt.Errorf("%w: key_length %d is not 16, 24 or 32", ErrInvalidParameters, p.KeyLength)
	case len(p.Salt) < 1 || len(p.Salt) > MaxSaltLength:
		return fmt.Errorf("%w: salt of %d bytes not within [1, %d]", ErrInvalidParameters, len(p.Salt), MaxSaltLength)
	}
	return nil
}

// jsonError keeps the kind and position of a JSON decoding error but not
// the offending value, which comes from the state server.
func jsonError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		corrupt base64.CorruptInputError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("syntax error at offset %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("field %q holds a JSON %s", clip(typ.Field), clip(typ.Value))
	case errors.As(err, &corrupt):
		return fmt.Errorf("invalid base64 at offset %d", int64(corrupt))
	}
	return fmt.Errorf("%T", err)
}
