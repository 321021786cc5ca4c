package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infrastate/backend-operator/internal/testing/builders"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// stackConfig is a root module with outputs of every kind a RemoteState
// publishes, and no providers, so that terraform needs no download.
const stackConfig = `
terraform {
  backend "http" {
    address        = %[1]q
    lock_address   = %[1]q
    unlock_address = %[1]q
  }
}

output "vpc_id" {
  value = "vpc-0123456789"
}

output "node_count" {
  value = 3
}

output "subnets" {
  value = ["10.0.1.0/24", "10.0.2.0/24"]
}

output "tags" {
  value = { team = "platform", env = "prod" }
}

output "db_password" {
  value     = "tf-generated-Secret-42"
  sensitive = true
}
`

// terraformOutput is one entry of `terraform output -json`.
type terraformOutput struct {
	Sensitive bool            `json:"sensitive"`
	Value     json.RawMessage `json:"value"`
}

var _ = Describe("RemoteState with the real Terraform and OpenTofu CLIs", func() {
	DescribeTable("publishes what output -json shows", func(ctx context.Context, runnerName string) {
		runner := runnerNamed(runnerName)
		ns := newNamespace(ctx)
		startManager(ctx, ns)
		createPassword(ctx, ns)

		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "main.tf"), []byte(fmt.Sprintf(stackConfig, stateURL(ns))), 0o600)).To(Succeed())
		w := testtools.Workdir{Bin: runner.Path, Dir: dir,
			Env: append(testtools.TerraformEnv(GinkgoT(), dir), "TF_HTTP_USERNAME="+stateUser, "TF_HTTP_PASSWORD="+statePassword)}
		w.MustRun(GinkgoT(), "init", "-input=false", "-no-color")
		w.MustRun(GinkgoT(), "apply", "-auto-approve", "-input=false", "-no-color")
		var shown map[string]terraformOutput
		Expect(json.Unmarshal([]byte(w.MustRun(GinkgoT(), "output", "-json", "-no-color")), &shown)).To(Succeed())
		Expect(shown).To(HaveLen(5))

		remote := builders.MakeRemoteState("stack", ns, "HttpBackend", "stack").Obj()
		create(ctx, makeStateBackend("stack", ns).Locks().Obj(), remote)
		eventuallyCondition(ctx, remote, "OutputsReady", metav1.ConditionTrue, "OutputsPublished")

		cm := renderedConfigMap(ctx, Default, ns, "stack-outputs")
		secret := renderedSecret(ctx, Default, ns, "stack-outputs")
		Expect(cm.Data).To(HaveLen(4))
		Expect(secret.Data).To(HaveLen(1))
		for name, out := range shown {
			want := published(out.Value)
			if out.Sensitive {
				Expect(secret.Data).To(HaveKeyWithValue(name, []byte(want)), "sensitive output %s", name)
				Expect(cm.Data).NotTo(HaveKey(name))
			} else {
				Expect(cm.Data).To(HaveKeyWithValue(name, want), "output %s", name)
				Expect(secret.Data).NotTo(HaveKey(name))
			}
		}
	},
		Entry("terraform", "terraform", SpecTimeout(3*time.Minute)),
		Entry("tofu", "tofu", SpecTimeout(3*time.Minute)),
	)
})

// runnerNamed returns the runner of testtools.Runners called name, and fails
// the spec when there is none.
func runnerNamed(name string) testtools.Runner {
	for _, r := range testtools.Runners(GinkgoT()) {
		if r.Name == name {
			return r
		}
	}
	Fail("no runner named " + name)
	return testtools.Runner{}
}

// published is how a RemoteState writes a value: a string raw, anything
// else as compact JSON.
func published(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	Expect(json.Compact(&buf, raw)).To(Succeed())
	return buf.String()
}
