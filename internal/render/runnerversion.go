package render

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Version is a runner release, MAJOR.MINOR.PATCH.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion parses MAJOR.MINOR or MAJOR.MINOR.PATCH, as spec.runner.version
// spells a version; MAJOR.MINOR is its first release, MAJOR.MINOR.0.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 2 && len(parts) != 3 {
		return Version{}, fmt.Errorf("version %q is not MAJOR.MINOR or MAJOR.MINOR.PATCH", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 9999 || p != strconv.Itoa(v) {
			return Version{}, fmt.Errorf("version %q is not MAJOR.MINOR or MAJOR.MINOR.PATCH", s)
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// String returns MAJOR.MINOR.PATCH.
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// compare returns -1, 0 or 1 as v is older than, the same as, or newer
// than o.
func (v Version) compare(o Version) int {
	if c := cmp.Compare(v.Major, o.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, o.Minor); c != 0 {
		return c
	}
	return cmp.Compare(v.Patch, o.Patch)
}

// Range is the versions from Since up to, not including, Until. A zero
// Until has no upper bound.
type Range struct {
	Since, Until Version
}

// bounded reports whether r has an upper bound.
func (r Range) bounded() bool { return r.Until != Version{} }

// contains reports whether v is in r.
func (r Range) contains(v Version) bool {
	return v.compare(r.Since) >= 0 && (!r.bounded() || v.compare(r.Until) < 0)
}

// intersect returns the versions in both r and o, and whether there are
// any.
func (r Range) intersect(o Range) (Range, bool) {
	out := r
	if o.Since.compare(out.Since) > 0 {
		out.Since = o.Since
	}
	if o.bounded() && (!out.bounded() || o.Until.compare(out.Until) < 0) {
		out.Until = o.Until
	}
	return out, !out.bounded() || out.Since.compare(out.Until) < 0
}

// String returns r as a version constraint: ">= 1.6.0" or
// ">= 1.6.0, < 1.8.0".
func (r Range) String() string {
	if !r.bounded() {
		return ">= " + r.Since.String()
	}
	return ">= " + r.Since.String() + ", < " + r.Until.String()
}

// since is the range from v on.
func since(v Version) Range {
	return Range{Since: v}
}
