package history

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Ref identifies one snapshot: the state's lineage (as its key segment,
// see LineageSegment), serial and content hash.
type Ref struct {
	// Lineage is the lineage's key segment.
	Lineage string
	// Serial is the state's serial.
	Serial uint64
	// SHA256 is the hex SHA-256 of the state as stored.
	SHA256 string
}

// serialDigits pads serials in keys, so that keys sort by serial.
const serialDigits = 20

// suffix ends every snapshot key.
const suffix = ".tfstate"

// plainLineage is a lineage used as its own key segment: Terraform's are
// UUIDs.
var plainLineage = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_]{0,127}$`)

// digestPrefix marks a lineage segment that is a digest of the lineage.
const digestPrefix = "sha256-"

// LineageSegment is the key segment of lineage: the lineage itself when it
// is a plain name (a UUID), otherwise a digest of it, so that no lineage a
// state server sends can reach another prefix ("/", "..") or make a key
// too long.
func LineageSegment(lineage string) string {
	if plainLineage.MatchString(lineage) && !strings.HasPrefix(lineage, digestPrefix) {
		return lineage
	}
	sum := sha256.Sum256([]byte(lineage))
	return digestPrefix + hex.EncodeToString(sum[:16])
}

// NewRef is the Ref of a state of lineage and serial whose content, as
// stored, hashes to sha256Hex.
func NewRef(lineage string, serial uint64, sha256Hex string) Ref {
	return Ref{Lineage: LineageSegment(lineage), Serial: serial, SHA256: sha256Hex}
}

// digestSegment is the segment LineageSegment makes of a lineage that is
// not plain.
var digestSegment = regexp.MustCompile(`^` + digestPrefix + `[0-9a-f]{32}$`)

// validSegment reports whether segment is one LineageSegment returns.
func validSegment(segment string) bool {
	return digestSegment.MatchString(segment) || (plainLineage.MatchString(segment) && !strings.HasPrefix(segment, digestPrefix))
}

// Key is the key of r's snapshot under prefix:
// <prefix>/<lineage>/<serial, 20 digits>-<sha256>.tfstate.
func Key(prefix string, r Ref) string {
	return fmt.Sprintf("%s/%s/%0*d-%s%s", prefix, r.Lineage, serialDigits, r.Serial, r.SHA256, suffix)
}

// ErrNotSnapshot is the error of ParseKey for a key that no snapshot has.
var ErrNotSnapshot = errors.New("not a snapshot key")

// sha256Hex is a hex SHA-256.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseKey returns the snapshot of key, a key listed under prefix. A key
// that Key does not write (another object under the prefix) is an error
// wrapping ErrNotSnapshot.
func ParseKey(prefix, key string) (Ref, error) {
	rest, ok := strings.CutPrefix(key, prefix+"/")
	if !ok {
		return Ref{}, fmt.Errorf("%w: %q is not under %q", ErrNotSnapshot, key, prefix)
	}
	lineage, name, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(name, "/") || !validSegment(lineage) {
		return Ref{}, fmt.Errorf("%w: %q", ErrNotSnapshot, key)
	}
	name, ok = strings.CutSuffix(name, suffix)
	serialText, hash, found := strings.Cut(name, "-")
	if !ok || !found || len(serialText) != serialDigits || !sha256Hex.MatchString(hash) {
		return Ref{}, fmt.Errorf("%w: %q", ErrNotSnapshot, key)
	}
	serial, err := strconv.ParseUint(serialText, 10, 64)
	if err != nil {
		return Ref{}, fmt.Errorf("%w: %q", ErrNotSnapshot, key)
	}
	return Ref{Lineage: lineage, Serial: serial, SHA256: hash}, nil
}
