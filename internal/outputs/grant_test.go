package outputs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// grantedState holds two plain outputs and two sensitive ones.
const grantedState = `"vpc_id":{"value":"vpc-1","type":"string"},"subnets":{"value":["a"],"type":["list","string"]},` +
	`"db_password":{"value":"pw","type":"string","sensitive":true},"token":{"value":"t","type":"string","sensitive":true}`

// testGrant grants the plain outputs plain (every plain one when nil) and
// the sensitive ones sensitive, reading only names when it is not nil.
func testGrant(plain, sensitive, names []string) *Grant {
	set := func(list []string) map[string]bool {
		if list == nil {
			return nil
		}
		m := map[string]bool{}
		for _, n := range list {
			m[n] = true
		}
		return m
	}
	p, s := set(plain), set(sensitive)
	return &Grant{Names: set(names), Allows: func(name string, isSensitive bool) bool {
		if isSensitive {
			return s[name]
		}
		return p == nil || p[name] || s[name]
	}}
}

func TestReadGranted(t *testing.T) {
	cases := map[string]struct {
		grant     *Grant
		defaults  map[string]json.RawMessage
		selectors []Selector
		// want are the names and keys published; wantNotGranted the names
		// of a NotGrantedError.
		want           []string
		wantNotGranted []string
	}{
		"no grant publishes everything": {
			want: []string{"db_password", "subnets", "token", "vpc_id"},
		},
		"every plain output, no sensitive one": {
			grant: testGrant(nil, nil, nil),
			want:  []string{"subnets", "vpc_id"},
		},
		"named outputs only": {
			grant: testGrant([]string{"vpc_id"}, []string{"token"}, []string{"vpc_id", "token"}),
			want:  []string{"token", "vpc_id"},
		},
		"a sensitive output named as a plain one only is withheld": {
			grant: testGrant([]string{"vpc_id", "db_password"}, nil, []string{"vpc_id", "db_password"}),
			want:  []string{"vpc_id"},
		},
		"selecting it is refused, naming it": {
			grant:          testGrant([]string{"vpc_id", "db_password"}, nil, []string{"vpc_id", "db_password"}),
			selectors:      []Selector{{Name: "vpc_id"}, {Name: "db_password"}},
			wantNotGranted: []string{"db_password"},
		},
		"defaults fill granted names only": {
			grant:    testGrant([]string{"vpc_id", "region"}, nil, []string{"vpc_id", "region"}),
			defaults: map[string]json.RawMessage{"region": json.RawMessage(`"eu"`), "zone": json.RawMessage(`"a"`)},
			want:     []string{"region", "vpc_id"},
		},
		"a selector the grant does not name is not read": {
			grant:     testGrant([]string{"vpc_id"}, nil, []string{"vpc_id"}),
			selectors: []Selector{{Name: "vpc_id", Key: "VPC"}},
			want:      []string{"vpc_id"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, values, err := ReadGranted(strings.NewReader(stateWith(grantedState)), nil, tc.defaults, tc.selectors, tc.grant)
			if tc.wantNotGranted != nil {
				var ng *NotGrantedError
				if !errors.As(err, &ng) {
					t.Fatalf("ReadGranted() error = %v, want a NotGrantedError", err)
				}
				if diff := cmp.Diff(tc.wantNotGranted, ng.Names); diff != "" {
					t.Errorf("NotGrantedError names (-want +got):\n%s", diff)
				}
				if strings.Contains(err.Error(), "pw") {
					t.Errorf("the error %q quotes a value", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadGranted() error = %v", err)
			}
			var got []string
			for _, v := range values {
				got = append(got, v.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("published (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWantedReadsOnlyNamedOutputs(t *testing.T) {
	grant := testGrant([]string{"a"}, []string{"s"}, []string{"a", "s"})
	cases := map[string]struct {
		selectors []Selector
		grant     *Grant
		// read and skipped are names Want must keep and skip.
		read, skipped []string
	}{
		"no grant, no selector: every output": {read: []string{"a", "b"}},
		"a grant's names":                     {grant: grant, read: []string{"a", "s"}, skipped: []string{"b"}},
		"selected among the grant's names":    {grant: grant, selectors: []Selector{{Name: "a"}, {Name: "b"}}, read: []string{"a"}, skipped: []string{"b", "s"}},
		"a grant of every plain output":       {grant: testGrant(nil, nil, nil), read: []string{"a", "b"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := wanted(tc.selectors, tc.grant)
			for _, n := range tc.read {
				if want != nil && !want(n) {
					t.Errorf("output %q is skipped, want it read", n)
				}
			}
			for _, n := range tc.skipped {
				if want == nil || want(n) {
					t.Errorf("output %q is read, want it skipped", n)
				}
			}
		})
	}
}
