package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// brokenManifests break rules of every kind; the API server must reject
// each with a message naming the field and the rule. bad-acl is alone in
// breaking a schema rule (an enum): the API server skips the CEL rules of
// an object that fails its schema, so it would hide bad-cos's messages.
const brokenManifests = `apiVersion: backends.infrastate.io/v1alpha1
kind: HttpBackend
metadata:
  name: bad-address
spec:
  address: ftp://state.example.com/app
  updateMethod: post
  retryWaitMin: 60
---
apiVersion: backends.infrastate.io/v1alpha1
kind: HttpBackend
metadata:
  name: bad-auth
spec:
  address: https://state.example.com/state/app
  passwordSecretRef:
    name: state-password
  probe:
    interval: 5s
    lockCheck: true
---
apiVersion: backends.infrastate.io/v1alpha1
kind: CosBackend
metadata:
  name: bad-cos
spec:
  bucket: My_Bucket
  endpoint: https://cos.ap-guangzhou.myqcloud.com
---
apiVersion: backends.infrastate.io/v1alpha1
kind: CosBackend
metadata:
  name: bad-acl
spec:
  bucket: tfstate-1250000000
  acl: public
---
apiVersion: backends.infrastate.io/v1alpha1
kind: RemoteState
metadata:
  name: bad-remote
spec:
  backendRef:
    kind: HttpBackend
    name: demo
  workspace: staging
`

var _ = Describe("Broken input", func() {
	It("is rejected by the API server with messages that name the field and the rule", func(ctx SpecContext) {
		ns := newNamespace(ctx, "broken")
		r := kc.run(ctx, ns, brokenManifests, "apply", "-f", "-")
		Expect(r.err).To(HaveOccurred(), "kubectl apply should fail:\n%s", r.stdout)
		for _, want := range []string{
			`HttpBackend.backends.infrastate.io "bad-address" is invalid`,
			// An address may carry a credential: the refusal never prints it.
			"spec.address: Forbidden: address must be an absolute http:// or https:// URL with a host",
			"updateMethod must be an upper-case HTTP method token",
			"retryWaitMin must be less than or equal to retryWaitMax",

			`HttpBackend.backends.infrastate.io "bad-auth" is invalid`,
			"passwordSecretRef needs username",
			"probe.lockCheck needs lockAddress and unlockAddress",
			"probe.interval must be 0s (probing disabled) or between 10s and 24h",

			`CosBackend.backends.infrastate.io "bad-cos" is invalid`,
			"bucket must be <name>-<appid>",
			"endpoint must look like https://cos-internal.<region>.tencentcos.cn",

			`RemoteState.backends.infrastate.io "bad-remote" is invalid`,
			"workspace must be default for an HttpBackend",

			`CosBackend.backends.infrastate.io "bad-acl" is invalid`,
			`spec.acl: Unsupported value: "public": supported values: "private", "public-read"`,
		} {
			Expect(r.stderr).To(ContainSubstring(want))
		}
		Expect(kc.must(ctx, ns, "get", "infrastate", "-o", "name")).To(BeEmpty(), "nothing invalid may be stored")
	})

	It("stalls with SecretNotFound when a referenced Secret is deleted, keeping the last good render", func(ctx SpecContext) {
		ns := newNamespace(ctx, "stall")
		mgr := startManager(ns)
		DeferCleanup(mgr.stop)
		createStateServerSecrets(ctx, ns, statePassword)
		kc.apply(ctx, ns, manifestOf(suiteBackend("app", ns+"-app").Obj()))
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/app", "--timeout=60s")
		files := kc.configMapData(ctx, ns, "app-backend")
		credentials := kc.secretData(ctx, ns, "app-backend-credentials")
		Expect(credentials).To(HaveKeyWithValue("TF_HTTP_PASSWORD", statePassword))

		By("deleting the password Secret")
		kc.must(ctx, ns, "delete", "secret", "demo-state-password")
		kc.must(ctx, ns, "wait", "--for=condition=Stalled", "httpbackend/app", "--timeout=60s")
		status, reason, message := kc.condition(ctx, ns, "httpbackend/app", "Stalled")
		Expect(status).To(Equal("True"))
		Expect(reason).To(Equal("SecretNotFound"))
		Expect(message).To(ContainSubstring("Secret " + ns + "/demo-state-password referenced by spec.passwordSecretRef does not exist"))
		status, reason, _ = kc.condition(ctx, ns, "httpbackend/app", "Ready")
		Expect(status).To(Equal("False"))
		Expect(reason).To(Equal("SecretNotFound"))
		Expect(kc.jsonpath(ctx, ns, "httpbackend/app", `{.status.conditions[?(@.type=="Reconciling")].status}`)).NotTo(Equal("True"),
			"Stalled and Reconciling are never both True")

		By("the runners keep the last good render")
		Consistently(func(g Gomega) {
			g.Expect(kc.configMapData(ctx, ns, "app-backend")).To(Equal(files))
			g.Expect(kc.secretData(ctx, ns, "app-backend-credentials")).To(Equal(credentials))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("recreating the Secret heals it")
		kc.must(ctx, ns, "create", "secret", "generic", "demo-state-password", "--from-literal=password="+statePassword)
		kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/app", "--timeout=60s")
		Expect(kc.jsonpath(ctx, ns, "httpbackend/app", `{.status.conditions[?(@.type=="Stalled")].status}`)).To(BeEmpty())
	})
})
