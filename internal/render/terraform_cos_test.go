package render

import (
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

// TestTerraformCos gives CosBackend files, rendered for terraform and for
// tofu (spec.runner), to that CLI, in each of the three layouts, behind a
// proxy that refuses every connection: the runner must accept the
// configuration (the assume_role block in backend.tfbackend included) and
// then contact the endpoint the settings imply, which shows that it read
// bucket, region, accelerate and assume_role as rendered. The attributes
// only some runners know are proved by TestRunnerTable.
func TestTerraformCos(t *testing.T) {
	runners := testtools.Runners(t) // fail early
	role := &backendsv1alpha1.AssumeRole{
		RoleArn:         "qcs::cam::uin/100000000001:roleName/tfstate",
		SessionName:     "backend-operator",
		SessionDuration: ptr.To[int32](3600),
		Policy:          `{"version":"2.0","statement":[{"effect":"allow","action":["cos:*"],"resource":["*"]}]}`,
	}
	cases := map[string]struct {
		spec     backendsv1alpha1.CosBackendSpec
		wantHost string // CONNECT host
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
	}
	creds := CosCredentials(CosSecrets{SecretID: []byte("AKIDexample"), SecretKey: []byte("example-key")})
	for _, runner := range runners {
		for name, tc := range cases {
			for layoutName, l := range layouts {
				t.Run(runner.Name+"/"+name+"/"+layoutName, func(t *testing.T) {
					t.Parallel()
					spec := *tc.spec.DeepCopy()
					spec.Runner = &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerFlavor(runner.Flavor)}
					files, err := CosFiles(spec, testRegion)
					if err != nil {
						t.Fatal(err)
					}
					w := newWorkdir(t, runner, l.files(files, "cos"), creds)
					out, err := w.Run(t, append([]string{"init", "-input=false", "-no-color"}, l.initArgs...)...)
					if err == nil {
						t.Fatalf("%s init succeeded through a refusing proxy:\n%s", runner.Name, out)
					}

					for _, diag := range configErrors {
						if strings.Contains(out, diag) {
							t.Fatalf("%s refused the configuration (%s):\n%s", runner.Name, diag, out)
						}
					}
					if want, got := "CONNECT "+tc.wantHost, w.proxy.requests(); !slices.Contains(got, want) {
						t.Errorf("%s contacted %q, want %q; output:\n%s", runner.Name, got, want, out)
					}
				})
			}
		}
	}
}
