package history

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	lineage = "6b3f2c1a-9d4e-4f6a-8b2c-1d2e3f4a5b6c"
	hashA   = "a3f1c2d4e5b6a7980a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071"
)

func TestKey(t *testing.T) {
	tests := []struct {
		name    string
		prefix  string
		ref     Ref
		wantKey string
	}{
		{
			name:    "a Terraform lineage is its own segment, the serial padded to sort",
			prefix:  "states/network",
			ref:     NewRef(lineage, 7, hashA),
			wantKey: "states/network/" + lineage + "/00000000000000000007-" + hashA + ".tfstate",
		},
		{
			name:    "a lineage that would climb out of the prefix is a digest",
			prefix:  "p",
			ref:     NewRef("../../other-team", 1, hashA),
			wantKey: "p/" + LineageSegment("../../other-team") + "/00000000000000000001-" + hashA + ".tfstate",
		},
		{
			name:    "a lineage shaped like a digest segment is a digest too",
			prefix:  "p",
			ref:     NewRef("sha256-abc", 1, hashA),
			wantKey: "p/" + LineageSegment("sha256-abc") + "/00000000000000000001-" + hashA + ".tfstate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := Key(tt.prefix, tt.ref)
			if key != tt.wantKey {
				t.Fatalf("Key() = %q, want %q", key, tt.wantKey)
			}
			if strings.Count(strings.TrimPrefix(key, tt.prefix+"/"), "/") != 1 || strings.Contains(key, "..") {
				t.Fatalf("Key() = %q leaves its lineage's segment", key)
			}
			got, err := ParseKey(tt.prefix, key)
			if err != nil {
				t.Fatalf("ParseKey(Key()) = %v", err)
			}
			if diff := cmp.Diff(tt.ref, got); diff != "" {
				t.Errorf("ParseKey(Key()) (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseKeyRefusesOtherObjects(t *testing.T) {
	good := Key("p", NewRef(lineage, 3, hashA))
	for name, key := range map[string]string{
		"another prefix":                     strings.Replace(good, "p/", "q/", 1),
		"a prefix sharing text":              "pp/" + strings.TrimPrefix(good, "p/"),
		"no lineage":                         "p/00000000000000000003-" + hashA + ".tfstate",
		"a deeper key":                       "p/" + lineage + "/x/00000000000000000003-" + hashA + ".tfstate",
		"a short serial":                     "p/" + lineage + "/3-" + hashA + ".tfstate",
		"another suffix":                     strings.TrimSuffix(good, ".tfstate") + ".json",
		"a short hash":                       "p/" + lineage + "/00000000000000000003-abc.tfstate",
		"an upper-case hash":                 "p/" + lineage + "/00000000000000000003-" + strings.ToUpper(hashA) + ".tfstate",
		"a lineage segment no lineage gives": "p/../00000000000000000003-" + hashA + ".tfstate",
		"a serial beyond 64 bits":            "p/" + lineage + "/99999999999999999999-" + hashA + ".tfstate",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseKey("p", key); !errors.Is(err, ErrNotSnapshot) {
				t.Errorf("ParseKey(%q) = %v, want ErrNotSnapshot", key, err)
			}
		})
	}
}
