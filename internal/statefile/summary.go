package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// SupportedVersion is the only state format version this package reads.
const SupportedVersion = 4

// ErrNoState is returned for an empty input: zero bytes, the way Terraform's
// http backend signals that no state exists. Whitespace alone is malformed.
var ErrNoState = errors.New("statefile: no state")

// ErrUnsupportedVersion is wrapped by the error returned for a state whose
// format version is missing or is not SupportedVersion.
var ErrUnsupportedVersion = errors.New("unsupported state format version")

// Summary is the metadata of a state: everything a probe reports, and no
// output value.
type Summary struct {
	// Serial increases with every write of the state.
	Serial uint64
	// Lineage identifies the state across its writes.
	Lineage string
	// TerraformVersion is the version of Terraform that last wrote the state.
	TerraformVersion string
	// Outputs describes the root module outputs, sorted by name.
	Outputs []OutputMeta
}

// OutputMeta describes one root module output without its value.
type OutputMeta struct {
	// Name is the output name.
	Name string
	// Type is the output's Terraform type as compact JSON, for example
	// `"string"` or `["list","string"]`.
	Type string
	// Sensitive reports whether the output is marked sensitive.
	Sensitive bool
}

// ReadSummary reads a state in format version 4 from r and returns its
// metadata. It streams: output values, resources and every other field are
// validated and skipped without being kept, so memory use does not depend on
// the size of the state. It reads r to the end and rejects trailing data.
//
// An empty r gives ErrNoState. Malformed JSON, a wrong field type, a format
// version other than 4 (ErrUnsupportedVersion) and an invalid output type are
// errors.
func ReadSummary(r io.Reader) (Summary, error) {
	s := newScanner(r)
	if _, err := s.r.Peek(1); errors.Is(err, io.EOF) {
		return Summary{}, ErrNoState
	}
	var (
		sum     Summary
		version *uint64
		outputs map[string]OutputMeta
	)
	err := s.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "version"):
			v, err := s.readUint(key)
			if err != nil {
				return err
			}
			version = v
		case strings.EqualFold(key, "serial"):
			v, err := s.readUint(key)
			if err != nil {
				return err
			}
			if v != nil {
				sum.Serial = *v
			}
		case strings.EqualFold(key, "lineage"):
			return s.readStringField(key, &sum.Lineage)
		case strings.EqualFold(key, "terraform_version"):
			return s.readStringField(key, &sum.TerraformVersion)
		case strings.EqualFold(key, "outputs"):
			return s.readOutputs(&outputs)
		default:
			return s.value(nil)
		}
		return nil
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return Summary{}, fmt.Errorf("reading state: %w", err)
	}
	if err := checkVersion(version); err != nil {
		return Summary{}, err
	}
	sum.Outputs = make([]OutputMeta, 0, len(outputs))
	for _, o := range outputs {
		sum.Outputs = append(sum.Outputs, o)
	}
	slices.SortFunc(sum.Outputs, func(a, b OutputMeta) int { return strings.Compare(a.Name, b.Name) })
	return sum, nil
}

// checkVersion accepts only SupportedVersion.
func checkVersion(v *uint64) error {
	if v == nil {
		return fmt.Errorf("%w: the state has no version", ErrUnsupportedVersion)
	}
	if *v != SupportedVersion {
		return fmt.Errorf("%w %d: only version %d is supported", ErrUnsupportedVersion, *v, SupportedVersion)
	}
	return nil
}

// readOutputs reads the outputs object. A null output entry, like a missing
// type, is an error: Terraform always writes a type.
func (s *scanner) readOutputs(dst *map[string]OutputMeta) error {
	if null, err := s.isNull(); err != nil || null {
		*dst = nil // as encoding/json does
		return err
	}
	if *dst == nil {
		*dst = map[string]OutputMeta{}
	}
	return s.object(func(name string) error {
		meta := OutputMeta{Name: name}
		var typ []byte
		err := s.object(func(key string) error {
			switch {
			case strings.EqualFold(key, "type"):
				if null, err := s.isNull(); err != nil || null {
					typ = nil
					return err
				}
				raw, err := s.capture()
				if err != nil {
					return fmt.Errorf("output %q type: %w", name, err)
				}
				typ = bytes.Clone(raw)
			case strings.EqualFold(key, "sensitive"):
				if err := s.readBool(key, &meta.Sensitive); err != nil {
					return fmt.Errorf("output %q: %w", name, err)
				}
			default:
				return s.value(nil)
			}
			return nil
		})
		if err != nil {
			return err
		}
		meta.Type, err = compactType(name, typ)
		if err != nil {
			return err
		}
		(*dst)[name] = meta
		return nil
	})
}

// compactType validates an output type and returns it as compact JSON.
func compactType(name string, typ []byte) (string, error) {
	if len(typ) == 0 {
		return "", fmt.Errorf("output %q has no type", name)
	}
	if _, err := Kind(typ); err != nil {
		return "", fmt.Errorf("output %q: %w", name, err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, typ); err != nil {
		return "", fmt.Errorf("output %q type: %w", name, err)
	}
	return b.String(), nil
}

// readUint reads an unsigned integer or null (nil).
func (s *scanner) readUint(key string) (*uint64, error) {
	if null, err := s.isNull(); err != nil || null {
		return nil, err
	}
	c, err := s.peek()
	if err != nil {
		return nil, s.readErr(err)
	}
	if c != '-' && !isDigit(c) {
		return nil, fmt.Errorf("%s: expected a number at offset %d, found %q", key, s.off, c)
	}
	raw, err := s.capture()
	if err != nil {
		return nil, err
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %s is not an unsigned 64-bit integer", key, raw)
	}
	return &v, nil
}

// readStringField reads a string or null (left unchanged) into dst.
func (s *scanner) readStringField(key string, dst *string) error {
	if null, err := s.isNull(); err != nil || null {
		return err
	}
	c, err := s.peek()
	if err != nil {
		return s.readErr(err)
	}
	if c != '"' {
		return fmt.Errorf("%s: expected a string at offset %d, found %q", key, s.off, c)
	}
	v, err := s.readString()
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// readBool reads true or false into dst, or null (dst unchanged).
func (s *scanner) readBool(key string, dst *bool) error {
	c, err := s.peek()
	if err != nil {
		return s.readErr(err)
	}
	switch c {
	case 't':
		*dst = true
		return s.literal(nil, "true")
	case 'f':
		*dst = false
		return s.literal(nil, "false")
	case 'n':
		return s.literal(nil, "null")
	}
	return fmt.Errorf("%s: expected a boolean at offset %d, found %q", key, s.off, c)
}
