package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxMetadataBytes bounds the lineage and the Terraform version as
// written: Terraform writes a UUID and a short version, so anything longer
// is not a Terraform state, and keeping it would let the input size the
// reader's memory.
const maxMetadataBytes = 1024

// metadata is the top level of a state besides its outputs.
type metadata struct {
	version          *uint64
	serial           uint64
	lineage          string
	terraformVersion string
	// encrypted is set for an OpenTofu envelope. With a Decryption it was
	// opened (readEnvelope errs when it cannot be) and the other fields are
	// the plain state's; without one only serial and lineage are known.
	encrypted bool
}

// outputVisitor is called for each output of the outputs object, with the
// scanner positioned on the output's value; it must consume it. index
// counts the outputs from 0, for messages: names are never quoted.
type outputVisitor func(s *scanner, name string, index int) error

// readDocument walks a state document from r: the top-level metadata, and
// every output through visit. Everything else (resources, check results) is
// validated and skipped without being kept. It reads r to the end and
// rejects trailing data. An empty r gives ErrNoState.
//
// An OpenTofu envelope (see envelope.go) is read for its serial and
// lineage, and, with dec, opened: its plain state is read with visit and
// its metadata returned. Without dec its payload is skipped, streaming.
func readDocument(r io.Reader, visit outputVisitor, dec *Decryption) (md metadata, err error) {
	s := newScanner(r)
	if _, err := s.r.Peek(1); errors.Is(err, io.EOF) {
		return metadata{}, ErrNoState
	}
	var (
		env        envelope
		hasOutputs bool
	)
	defer func() {
		if env.release != nil {
			env.release()
		}
	}()
	err = s.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "version"):
			v, err := s.readUint("version")
			if err != nil {
				return err
			}
			md.version = v
		case strings.EqualFold(key, "serial"):
			v, err := s.readUint("serial")
			if err != nil {
				return err
			}
			if v != nil {
				md.serial = *v
			}
		case strings.EqualFold(key, "lineage"):
			return s.readStringField("lineage", &md.lineage)
		case strings.EqualFold(key, "terraform_version"):
			return s.readStringField("terraform_version", &md.terraformVersion)
		case strings.EqualFold(key, "outputs"):
			hasOutputs = true
			return s.readOutputs(visit)
		case strings.EqualFold(key, "encryption_version"):
			return s.readStringField("encryption_version", &env.version)
		case strings.EqualFold(key, "meta") && dec != nil:
			return s.readMeta(&env)
		case strings.EqualFold(key, "encrypted_data") && dec != nil:
			return s.readPayload(&env, dec)
		default:
			return s.value(nil)
		}
		return nil
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return metadata{}, fmt.Errorf("reading state: %w", err)
	}
	if env.version != "" {
		return readEnvelope(md, &env, hasOutputs, dec, visit)
	}
	if err := checkVersion(md.version); err != nil {
		return metadata{}, err
	}
	return md, nil
}

// readEnvelope finishes reading an envelope whose clear-text fields are in
// md: it opens the payload with dec, or returns md marked encrypted
// without dec. Outputs in clear text beside a payload are refused: they
// would be mistaken for the state's.
func readEnvelope(md metadata, env *envelope, hasOutputs bool, dec *Decryption, visit outputVisitor) (metadata, error) {
	if err := checkEnvelope(env.version); err != nil {
		return metadata{}, err
	}
	if hasOutputs {
		return metadata{}, fmt.Errorf("%w: an encrypted state with outputs in clear text", ErrMalformed)
	}
	if dec == nil {
		md.encrypted = true
		return md, nil
	}
	if !env.kept {
		return metadata{}, fmt.Errorf("%w: an encrypted state without encrypted_data", ErrMalformed)
	}
	return env.open(dec, visit)
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

// readOutputs reads the outputs object, calling visit for each output. A
// null outputs object has no outputs.
func (s *scanner) readOutputs(visit outputVisitor) error {
	index := 0
	return s.object(func(name string) error {
		err := visit(s, name, index)
		index++
		return err
	})
}

// outputFields reads one output object: its type (validated and returned
// compact), its sensitivity, and its value through value, which must
// consume it. A null output, like a missing type, is an error: Terraform
// always writes a type.
func (s *scanner) outputFields(index int, value func() error) (typ []byte, sensitive bool, err error) {
	err = s.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "type"):
			if null, err := s.isNull(); err != nil || null {
				typ = nil
				return err
			}
			raw, err := s.capture(0)
			if err != nil {
				return fmt.Errorf("output %d type: %w", index, err)
			}
			typ = bytes.Clone(raw)
		case strings.EqualFold(key, "sensitive"):
			if err := s.readBool(&sensitive); err != nil {
				return fmt.Errorf("output %d sensitive: %w", index, err)
			}
		case strings.EqualFold(key, "value"):
			return value()
		default:
			return s.value(nil)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if len(typ) == 0 {
		return nil, false, fmt.Errorf("output %d has no type", index)
	}
	if _, err := Kind(typ); err != nil {
		return nil, false, fmt.Errorf("output %d: %w", index, err)
	}
	return typ, sensitive, nil // captured without whitespace: already compact
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
		return nil, fmt.Errorf("%s: expected a number at offset %d", key, s.off)
	}
	raw, err := s.capture(64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: not an unsigned 64-bit integer", key)
	}
	return &v, nil
}

// readStringField reads a string of at most maxMetadataBytes, or null
// (dst unchanged), into dst.
func (s *scanner) readStringField(key string, dst *string) error {
	err := s.readBoundedString(key, maxMetadataBytes, dst)
	if errors.Is(err, errValueTooLong) {
		return fmt.Errorf("%s is longer than %d bytes: not a Terraform state", key, maxMetadataBytes)
	}
	return err
}

// readBoundedString reads a string of at most limit bytes as written, or
// null (dst unchanged), into dst. A longer one is an error wrapping
// errValueTooLong.
func (s *scanner) readBoundedString(key string, limit int, dst *string) error {
	if null, err := s.isNull(); err != nil || null {
		return err
	}
	c, err := s.peek()
	if err != nil {
		return s.readErr(err)
	}
	if c != '"' {
		return fmt.Errorf("%s: expected a string at offset %d", key, s.off)
	}
	v, err := s.readString(limit)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	*dst = v
	return nil
}

// readBool reads true or false into dst, or null (dst unchanged).
func (s *scanner) readBool(dst *bool) error {
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
	return fmt.Errorf("expected a boolean at offset %d", s.off)
}
