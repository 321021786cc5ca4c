package render

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// configErrors are the diagnostics terraform gives for a backend
// configuration it cannot read.
var configErrors = []string{
	"Unsupported argument",
	"Unsupported block type",
	"Extraneous JSON object property",
	"Missing required argument",
	"Invalid backend configuration",
	"Duplicate",
	"Invalid character",
	"Invalid expression",
	"Variables not allowed",
}

// TestTerraformCos gives rendered CosBackend files to the real terraform
// CLI, in each of the three layouts, behind a proxy that refuses every
// connection: terraform must accept the configuration (the assume_role
// block in backend.tfbackend included) and then contact the endpoint the
// settings imply, which shows that it read bucket, region, accelerate and
// assume_role as rendered. Attributes Terraform v1.5.7 does not know must be
// refused by name with that version.
func TestTerraformCos(t *testing.T) {
	testtools.Terraform(t) // fail early
	version := terraformVersion(t)
	role := &backendsv1alpha1.AssumeRole{
		RoleArn:         "qcs::cam::uin/100000000001:roleName/tfstate",
		SessionName:     "backend-operator",
		SessionDuration: ptr.To[int32](3600),
		Policy:          `{"version":"2.0","statement":[{"effect":"allow","action":["cos:*"],"resource":["*"]}]}`,
	}
	cases := map[string]struct {
		spec     backendsv1alpha1.CosBackendSpec
		wantHost string // CONNECT host, when terraform accepts the configuration
		// unknownTo157 is an attribute Terraform v1.5.7 refuses.
		unknownTo157 string
	}{
		"minimal": {
			spec:     backendsv1alpha1.CosBackendSpec{Bucket: testBucket},
			wantHost: testBucket + ".cos." + testRegion + ".myqcloud.com:443",
		},
		"storage fields": {
			spec: backendsv1alpha1.CosBackendSpec{
				Bucket: testBucket, Prefix: "teams/app", Key: "app.tfstate", Encrypt: new(false), ACL: "public-read",
			},
			wantHost: testBucket + ".cos." + testRegion + ".myqcloud.com:443",
		},
		"accelerate": {
			spec:     backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Accelerate: new(true), Encrypt: new(true)},
			wantHost: testBucket + ".cos.accelerate.myqcloud.com:443",
		},
		"assume_role": {
			spec:     backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Prefix: "p", AssumeRole: role},
			wantHost: "sts.tencentcloudapi.com:443",
		},
		"escaping": {
			spec:     cosCases()["escaping"],
			wantHost: "sts.tencentcloudapi.com:443",
		},
		"endpoint": {
			spec:         backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Endpoint: "https://cos-internal.ap-guangzhou.tencentcos.cn"},
			unknownTo157: "endpoint",
		},
		"domain": {
			spec:         backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Domain: "internal.tencentcloudapi.com"},
			unknownTo157: "domain",
		},
		"assume_role external_id": {
			spec:         backendsv1alpha1.CosBackendSpec{Bucket: testBucket, AssumeRole: &backendsv1alpha1.AssumeRole{RoleArn: "r", SessionName: "s-1", ExternalID: "e"}},
			unknownTo157: "external_id",
		},
	}
	creds := CosCredentials(CosSecrets{SecretID: []byte("AKIDexample"), SecretKey: []byte("example-key")})
	for name, tc := range cases {
		for layoutName, l := range layouts {
			t.Run(name+"/"+layoutName, func(t *testing.T) {
				t.Parallel()
				files, err := CosFiles(tc.spec, testRegion)
				if err != nil {
					t.Fatal(err)
				}
				w := newWorkdir(t, l.files(files, "cos"), creds)
				out, err := w.Run(t, append([]string{"init", "-input=false", "-no-color"}, l.initArgs...)...)
				if err == nil {
					t.Fatalf("terraform init succeeded through a refusing proxy:\n%s", out)
				}

				if tc.unknownTo157 != "" {
					if !strings.HasPrefix(version, "1.5.") {
						t.Logf("terraform %s; %s is unknown to v1.5.7 only; output:\n%s", version, tc.unknownTo157, out)
						return
					}
					if want := `named "` + tc.unknownTo157 + `"`; !strings.Contains(out, want) {
						t.Errorf("terraform %s did not refuse %s by name (%q):\n%s", version, tc.unknownTo157, want, out)
					}
					return
				}
				for _, diag := range configErrors {
					if strings.Contains(out, diag) {
						t.Fatalf("terraform refused the configuration (%s):\n%s", diag, out)
					}
				}
				if want, got := "CONNECT "+tc.wantHost, w.proxy.requests(); !slices.Contains(got, want) {
					t.Errorf("terraform contacted %q, want %q; output:\n%s", got, want, out)
				}
			})
		}
	}
}

// terraformVersion returns the version of the terraform binary the tests
// run, such as 1.5.7.
func terraformVersion(t *testing.T) string {
	t.Helper()
	w := newWorkdir(t, nil, nil)
	var v struct {
		Version string `json:"terraform_version"`
	}
	out := w.MustRun(t, "version", "-json")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Version == "" {
		t.Fatalf("terraform version -json: %v\n%s", err, out)
	}
	return v.Version
}
