package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/render"
)

// +kubebuilder:rbac:groups=backends.infrastate.io,resources=cosbackends,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=cosbackends/status,verbs=patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=cosbackends/finalizers,verbs=update

// Keys of the CosBackend credentials Secret.
const (
	cosSecretIDKey      = "secretId"
	cosSecretKeyKey     = "secretKey"
	cosSecurityTokenKey = "securityToken"
)

// cosKind is the CosBackend kind: a Tencent Cloud Object Storage state
// backend, read through internal/cos.
type cosKind struct{}

func (cosKind) name() string                           { return backendsv1alpha1.CosBackendKind }
func (cosKind) newObject() backendObject               { return &backendsv1alpha1.CosBackend{} }
func (cosKind) newList() client.ObjectList             { return &backendsv1alpha1.CosBackendList{} }
func (cosKind) readyGates() []string                   { return []string{backendsv1alpha1.BucketReadyCondition} }
func (cosKind) failures() []failureClass               { return cosFailures }
func (cosKind) configMapName(obj backendObject) string { return cosBackend(obj).Spec.ConfigMapName }
func (cosKind) checkSpec(obj backendObject) error      { return checkCosSpec(cosBackend(obj).Spec) }
func (cosKind) probeSpec(obj backendObject) *backendsv1alpha1.ProbeSpec {
	return cosBackend(obj).Spec.Probe
}

// cosBackend is obj, an object of cosKind, as a CosBackend.
func cosBackend(obj backendObject) *backendsv1alpha1.CosBackend {
	return obj.(*backendsv1alpha1.CosBackend)
}

// references are the credentials Secret and the passphrases' Secrets.
func (cosKind) references(obj backendObject) []string {
	spec := cosBackend(obj).Spec
	var refs []string
	if ref := spec.CredentialsSecretRef; ref != nil {
		refs = append(refs, related.SecretReference(ref.Name))
	}
	return append(refs, encryptionReferences(spec.Encryption)...)
}

// resolve decides the region in effect (status.region) and reads the
// credentials and the passphrases, and reports every problem among them
// at once (see joinStalls).
func (cosKind) resolve(ctx context.Context, env kindEnv, obj backendObject) (resolvedBackend, error) {
	backend := cosBackend(obj)
	region, regionErr := effectiveRegion(backend.Spec, env.cosDefaultRegion)
	if regionErr == nil {
		backend.Status.Region = region
	}
	secrets, secretsErr := resolveCosSecrets(ctx, env.refs, backend)
	encryption, encryptionErr := resolveEncryption(ctx, env.refs, backend.Spec.Encryption)
	if err := conditions.JoinStalls(regionErr, secretsErr, encryptionErr); err != nil {
		return nil, err
	}
	return &cosResolved{backend: backend, region: region, secrets: secrets, encryption: encryption, env: env}, nil
}

// cosResolved is a CosBackend with its region and credentials.
type cosResolved struct {
	backend    *backendsv1alpha1.CosBackend
	region     string
	secrets    render.CosSecrets
	encryption *stateEncryption
	env        kindEnv
}

func (c *cosResolved) inputs() [][]byte {
	return append([][]byte{[]byte(c.region), c.secrets.SecretID, c.secrets.SecretKey, c.secrets.SecurityToken}, c.encryption.inputs()...)
}

func (c *cosResolved) render() (render.Files, map[string][]byte, error) {
	files, err := render.CosFiles(c.backend.Spec, c.region)
	if err != nil {
		return files, nil, err
	}
	credentials := render.CosCredentials(c.secrets)
	return files, credentials, c.encryption.addEnv(credentials)
}

func (c *cosResolved) decrypter() stateDecrypter {
	return stateDecrypter{encryption: c.encryption, decryptions: c.env.decryptions, derivations: c.env.derivations, namespace: c.env.tenant}
}

// openState reads a workspace's state object with the backend's keys. A
// backend whose only credentials are a role cannot be read (see
// assumeRoleOnly): a stall, since only a change of the backend's spec
// can give the operator keys to read with.
func (c *cosResolved) openState(workspace string) (stateStreamer, error) {
	if assumeRoleOnly(c.backend) {
		return nil, conditions.Stall(backendsv1alpha1.AssumeRoleNotSupportedReason, "CosBackend %s cannot be read: %v", c.backend.Name, errAssumeRoleNotSupported)
	}
	cc, err := c.client()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, read func(io.Reader) error) (bool, int64, error) {
		return cc.StreamState(ctx, workspace, read)
	}, nil
}

// writer writes a workspace's state object with the backend's keys, as
// Terraform's COS backend does while it holds the .tflock object (the
// lock ID is not sent: COS locks are objects of their own).
func (c *cosResolved) writer(workspace string) (stateWriter, error) {
	if assumeRoleOnly(c.backend) {
		return nil, conditions.Stall(backendsv1alpha1.AssumeRoleNotSupportedReason, "CosBackend %s cannot be written: %v", c.backend.Name, errAssumeRoleNotSupported)
	}
	cc, err := c.client()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ string, body io.ReadSeeker, size int64, md5sum [16]byte) error {
		return cc.WriteState(ctx, workspace, body, size, md5sum)
	}, nil
}

// lockWaiting is nothing: COS locks are lock objects the operator reads
// and deletes itself.
func (c *cosResolved) lockWaiting() string { return "" }

// locker locks a workspace through its .tflock object with the backend's
// keys. A backend whose only credentials are a role cannot be locked (see
// assumeRoleOnly).
func (c *cosResolved) locker(workspace string, _ client.Object) (stateLocker, error) {
	if assumeRoleOnly(c.backend) {
		return nil, conditions.Stall(backendsv1alpha1.AssumeRoleNotSupportedReason, "CosBackend %s cannot be locked: %v", c.backend.Name, errAssumeRoleNotSupported)
	}
	cc, err := c.client()
	if err != nil {
		return nil, conditions.Stall(backendsv1alpha1.BackendNotReadyReason, "CosBackend %s cannot be used: %v", c.backend.Name, err)
	}
	return &cosLocker{cc: cc, workspace: workspace}, nil
}

// client builds the backend's COS client.
func (c *cosResolved) client() (*cos.Client, error) {
	cc, err := c.env.cosClients(cosConfig(c.backend.Spec, c.region, c.secrets))
	if err != nil {
		return nil, fmt.Errorf("building a COS client: %w", err)
	}
	return cc, nil
}

// probe checks the bucket as Terraform does, then reads the state object
// and the .tflock object of the default workspace, and releases the lock
// forceUnlock names, or lockPolicy a gone holder's. A backend whose only
// credentials are a role is not probed.
func (c *cosResolved) probe(interval time.Duration, _ bool) probePlan {
	backend := c.backend
	plan := probePlan{condition: backendsv1alpha1.BucketReadyCondition}
	switch {
	case interval == 0:
		plan.off = probeDisabled()
		plan.lockUnchecked = "probing is off (spec.probe.interval is 0s). Set an interval to have the lock read."
		return plan
	case assumeRoleOnly(backend):
		plan.lockUnchecked = "the operator has no credentials to read the bucket with (spec.assumeRole only). " +
			"Set credentialsSecretRef to have the lock read."
		plan.off = &conditions.Observation{Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.AssumeRoleNotSupportedReason,
			Message: "The bucket is not checked: the only credentials are spec.assumeRole, and the operator does not assume roles " +
				"(it makes no STS call). Runners assume it with keys of their own environment. Set credentialsSecretRef to keys " +
				"that may read the bucket to have it checked."}
		return plan
	}
	forceUnlock := forceUnlockID(backend.Spec.ForceUnlock)
	// The holder check copies status.lock and status.holderPod when the
	// probe is submitted (see advanceProbe), not at every reconcile.
	plan.start = func() (probes.Func, error) {
		cc, err := c.client()
		if err != nil {
			return nil, conditions.Stall(backendsv1alpha1.InvalidSpecReason, "Cannot build a COS client: %v", err)
		}
		dec := c.decrypter()
		holder := newHolderCheck(c.env, backend, backend.Spec.LockPolicy)
		return func(ctx context.Context) any {
			return runCosProbe(ctx, c.env.metrics, c.env.clock, cc, dec, forceUnlock, holder)
		}, nil
	}
	plan.apply = func(value any, finished time.Time) {
		applyCosProbe(c.env.metrics, backend, value.(cosProbeResult), finished)
	}
	plan.lockPolicy = backend.Spec.LockPolicy
	return plan
}

// errAssumeRoleNotSupported is the read of a CosBackend whose only
// credentials are a role to assume, which the operator does not assume.
var errAssumeRoleNotSupported = errors.New("the backend's only credentials are spec.assumeRole, and the operator does not assume roles " +
	"(it makes no STS call): set the backend's credentialsSecretRef to keys that may read the bucket")

// assumeRoleOnly reports a CosBackend whose only credentials are a role to
// assume: runners assume it with keys of their own environment, and the
// controller, which makes no STS call, has nothing to read the bucket
// with.
func assumeRoleOnly(b *backendsv1alpha1.CosBackend) bool {
	return b.Spec.CredentialsSecretRef == nil && b.Spec.AssumeRole != nil
}

// effectiveRegion is spec.region, else the manager's default. Terraform
// requires a region, so none is a stall (RegionMissing).
func effectiveRegion(spec backendsv1alpha1.CosBackendSpec, managerDefault string) (string, error) {
	if spec.Region != "" {
		return spec.Region, nil
	}
	if managerDefault != "" {
		return managerDefault, nil
	}
	return "", conditions.Stall(backendsv1alpha1.RegionMissingReason,
		"The backend sets no spec.region and the manager has no default region (--cos-default-region or TENCENTCLOUD_REGION): "+
			"set spec.region to the bucket's region")
}

// resolveCosSecrets reads secretId, secretKey and the optional
// securityToken from credentialsSecretRef. A missing Secret or key is a
// stall naming the Secret and keys.
func resolveCosSecrets(ctx context.Context, refs referenceReader, backend *backendsv1alpha1.CosBackend) (render.CosSecrets, error) {
	var secrets render.CosSecrets
	ref := backend.Spec.CredentialsSecretRef
	if ref == nil {
		return secrets, nil
	}
	const field = "spec.credentialsSecretRef"
	secret, err := refs.secret(ctx, ref.Name, field)
	if err != nil {
		return secrets, err
	}
	keys, err := requiredKeys(secret, field, "", cosSecretIDKey, cosSecretKeyKey)
	if err != nil {
		return secrets, err
	}
	secrets.SecretID, secrets.SecretKey = keys[0], keys[1]
	secrets.SecurityToken = secret.Data[cosSecurityTokenKey]
	return secrets, nil
}
