package lockinfo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// created is the Created of the tests' holders.
var created = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

// holder is a lock holder with every field set.
func holder() Info {
	return Info{
		ID: "holder-id", Operation: "OperationTypeApply", Info: "ci", Who: "alice@runner",
		Version: "1.5.7", Created: created, Path: "tfstate/terraform.tfstate.tflock",
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	info := New("OperationTypeApply", "operator@cluster")
	if _, err := uuid.Parse(info.ID); err != nil {
		t.Errorf("ID %q is not a UUID: %v", info.ID, err)
	}
	if info.Created.Location() != time.UTC || time.Since(info.Created) > time.Minute {
		t.Errorf("Created = %v, want now in UTC", info.Created)
	}
	info.ID, info.Created = "", time.Time{}
	if diff := cmp.Diff(Info{Operation: "OperationTypeApply", Who: "operator@cluster"}, info); diff != "" {
		t.Errorf("New mismatch (-want +got):\n%s", diff)
	}
}

// TestEncode checks the wire form: seven keys, always present, Go field
// names, Created in RFC 3339 with nanoseconds.
func TestEncode(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		info Info
		want map[string]any
	}{
		"every field": {
			info: holder(),
			want: map[string]any{
				"ID": "holder-id", "Operation": "OperationTypeApply", "Info": "ci", "Who": "alice@runner",
				"Version": "1.5.7", "Created": "2026-01-02T03:04:05.123456789Z", "Path": "tfstate/terraform.tfstate.tflock",
			},
		},
		"only an ID": {
			info: Info{ID: "id"},
			want: map[string]any{
				"ID": "id", "Operation": "", "Info": "", "Who": "", "Version": "", "Created": "0001-01-01T00:00:00Z", "Path": "",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body, err := tc.info.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("JSON mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeFails(t *testing.T) {
	t.Parallel()
	_, err := Info{ID: "id", Created: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}.Encode()
	if err == nil || !strings.HasPrefix(err.Error(), "encoding the LockInfo: ") {
		t.Errorf("Encode of a year beyond 9999: err %v, want one starting with \"encoding the LockInfo: \"", err)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		data    string
		want    Info
		wantErr string
	}{
		"what Encode writes": {
			data: `{"ID":"holder-id","Operation":"OperationTypeApply","Info":"ci","Who":"alice@runner","Version":"1.5.7",` +
				`"Created":"2026-01-02T03:04:05.123456789Z","Path":"tfstate/terraform.tfstate.tflock"}`,
			want: holder(),
		},
		"some keys":          {data: `{"Who":"x","Extra":1}`, want: Info{Who: "x"}},
		"not JSON":           {data: `secret-token`, wantErr: "syntax error at byte 1"},
		"a field's type":     {data: `{"ID":"a","Who":["secret-token"]}`, wantErr: "a value of the wrong type at byte 17"},
		"an invalid Created": {data: `{"ID":"a","Created":"secret-token"}`, wantErr: "a field has an invalid value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Decode([]byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("Decode error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRewrite(t *testing.T) {
	t.Parallel()
	got := holder()
	got.Rewrite(strings.ToUpper)
	want := Info{
		ID: "HOLDER-ID", Operation: "OPERATIONTYPEAPPLY", Info: "CI", Who: "ALICE@RUNNER",
		Version: "1.5.7", Created: created, Path: "TFSTATE/TERRAFORM.TFSTATE.TFLOCK",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Rewrite mismatch (-want +got):\n%s", diff)
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		info Info
		want string
	}{
		"every field": {
			info: holder(),
			want: "ID=holder-id, operation=OperationTypeApply, who=alice@runner, version=1.5.7, info=ci, " +
				"path=tfstate/terraform.tfstate.tflock, created=2026-01-02T03:04:05Z",
		},
		"only an ID": {info: Info{ID: "id"}, want: "ID=id"},
		"no ID":      {info: Info{Who: "x"}, want: "ID=, who=x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := tc.info.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
