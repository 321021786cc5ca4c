package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// configManager is config/manager's Deployment, the reference the chart's
// must match in everything but names, labels and the image.
func configManager(t *testing.T) appsv1.Deployment {
	t.Helper()
	return decode[appsv1.Deployment](t, find(t, readObjects(t, "config/manager/manager.yaml"), "Deployment", "system", "controller-manager"))
}

// renderedManager is the chart's Deployment rendered with the given values.
func renderedManager(t *testing.T, set ...string) appsv1.Deployment {
	t.Helper()
	return decode[appsv1.Deployment](t, find(t, template(t, set...), "Deployment", releaseNamespace, prefix))
}

// managerContainer returns the Deployment's one container.
func managerContainer(t *testing.T, d appsv1.Deployment) corev1.Container {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment %s has %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	return d.Spec.Template.Spec.Containers[0]
}

// TestDeploymentMatchesConfigManager checks that with the default values the
// chart runs the manager as config/manager does: the same hardening (Pod and
// container security contexts), command, arguments, environment, ports,
// probes, resources, volumes and their mounts (the spool), node selector
// and grace period.
func TestDeploymentMatchesConfigManager(t *testing.T) {
	want, got := configManager(t), renderedManager(t)
	wantPod, gotPod := want.Spec.Template.Spec, got.Spec.Template.Spec
	wantC, gotC := managerContainer(t, want), managerContainer(t, got)
	cases := map[string]struct{ want, got any }{
		"Pod securityContext":           {wantPod.SecurityContext, gotPod.SecurityContext},
		"container securityContext":     {wantC.SecurityContext, gotC.SecurityContext},
		"command":                       {wantC.Command, gotC.Command},
		"args":                          {wantC.Args, gotC.Args},
		"env":                           {wantC.Env, gotC.Env},
		"ports":                         {wantC.Ports, gotC.Ports},
		"livenessProbe":                 {wantC.LivenessProbe, gotC.LivenessProbe},
		"readinessProbe":                {wantC.ReadinessProbe, gotC.ReadinessProbe},
		"resources":                     {wantC.Resources, gotC.Resources},
		"volumes":                       {wantPod.Volumes, gotPod.Volumes},
		"volumeMounts":                  {wantC.VolumeMounts, gotC.VolumeMounts},
		"nodeSelector":                  {wantPod.NodeSelector, gotPod.NodeSelector},
		"terminationGracePeriodSeconds": {wantPod.TerminationGracePeriodSeconds, gotPod.TerminationGracePeriodSeconds},
		"replicas":                      {want.Spec.Replicas, got.Spec.Replicas},
		"default container annotation":  {want.Spec.Template.Annotations, got.Spec.Template.Annotations},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("%s differs from config/manager (-want +got):\n%s", name, diff)
			}
		})
	}
	if gotPod.ServiceAccountName != prefix {
		t.Errorf("serviceAccountName = %q, want %q", gotPod.ServiceAccountName, prefix)
	}
}

// TestDeploymentSpool checks that the manager, whose root filesystem is
// read-only, writes its spool files (os.TempDir) to /tmp, an emptyDir of
// its own bounded by spoolSizeLimit, in the chart and in config/manager;
// and that the chart's default is config/manager's.
func TestDeploymentSpool(t *testing.T) {
	cases := map[string]struct {
		// config reads config/manager instead of rendering the chart
		// with set.
		config bool
		set    []string
		want   string
	}{
		"config/manager":  {config: true, want: "2Gi"},
		"the chart":       {want: "2Gi"},
		"a binary limit":  {set: []string{"spoolSizeLimit=8Gi"}, want: "8Gi"},
		"a decimal limit": {set: []string{"spoolSizeLimit=500M"}, want: "500M"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var d appsv1.Deployment
			if tc.config {
				d = configManager(t)
			} else {
				d = renderedManager(t, tc.set...)
			}
			c := managerContainer(t, d)
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("the manager's root filesystem is not read-only: %+v", c.SecurityContext)
			}
			var mounted []string
			for _, m := range c.VolumeMounts {
				if m.MountPath == "/tmp" {
					mounted = append(mounted, m.Name)
					if m.ReadOnly || m.SubPath != "" || m.SubPathExpr != "" {
						t.Errorf("/tmp is mounted %+v, want the whole volume, writable", m)
					}
				}
			}
			if !slices.Equal(mounted, []string{"spool"}) {
				t.Fatalf("/tmp is mounted from %v, want the volume spool", mounted)
			}
			var spool []corev1.Volume
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == "spool" {
					spool = append(spool, v)
				}
			}
			want := []corev1.Volume{{
				Name:         "spool",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse(tc.want))}},
			}}
			if diff := cmp.Diff(want, spool); diff != "" {
				t.Errorf("the spool volume (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeploymentValues checks how the values change the manager's Pod.
func TestDeploymentValues(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0f", 32)
	cases := map[string]struct {
		set   []string
		check func(t *testing.T, d appsv1.Deployment)
	}{
		"image from the appVersion": {
			check: wantImage("ghcr.io/infrastate/backend-operator:v0.1.0"),
		},
		"image tag": {
			set:   []string{"image.repository=registry.example.com/bo", "image.tag=v9.9.9"},
			check: wantImage("registry.example.com/bo:v9.9.9"),
		},
		"image digest wins over the tag": {
			set:   []string{"image.repository=registry.example.com/bo", "image.tag=v9.9.9", "image.digest=" + digest},
			check: wantImage("registry.example.com/bo@" + digest),
		},
		"watched namespaces": {
			set:   []string{"watchNamespaces={team-a,team-b}"},
			check: wantArgs([]string{"--watch-namespaces=team-a,team-b"}, nil),
		},
		"a Lease of its own": {
			set:   []string{"leaderElectionID=team-a-operator"},
			check: wantArgs([]string{"--leader-elect", "--leader-election-id=team-a-operator"}, nil),
		},
		"no leader election": {
			set:   []string{"leaderElection=false"},
			check: wantArgs(nil, []string{"--leader-elect"}),
		},
		"address policy and limits": {
			set: []string{
				"deniedAddressCIDRs={10.96.0.0/12}", "allowedAddressCIDRs={192.0.2.0/24}",
				"secretReferencePolicy=labeled", "maxConcurrentProbes=32", "maxConcurrentProbesPerNamespace=2",
				"maxConcurrentDecryptions=1", "defaultProbeInterval=1m",
			},
			check: wantArgs([]string{
				"--denied-address-cidrs=10.96.0.0/12", "--allowed-address-cidrs=192.0.2.0/24",
				"--secret-reference-policy=labeled", "--max-concurrent-probes=32",
				"--max-concurrent-probes-per-namespace=2", "--max-concurrent-decryptions=1", "--default-probe-interval=1m",
			}, nil),
		},
		"budgets": {
			set: []string{
				"budgets.readMemoryPerNamespace=12Mi", "budgets.readMemoryTotal=64Mi", "budgets.apiStoragePerNamespace=8Mi",
				"budgets.apiStorageTotal=256Mi", "budgets.keyDerivationCPUPerNamespace=2s", "budgets.keyDerivationCPUTotal=10s",
			},
			check: wantArgs([]string{
				"--read-memory-per-namespace=12Mi", "--read-memory-total=64Mi", "--api-storage-per-namespace=8Mi",
				"--api-storage-total=256Mi", "--key-derivation-cpu-per-namespace=2s", "--key-derivation-cpu-total=10s",
			}, nil),
		},
		"extra args come last": {
			set: []string{"extraArgs={--zap-log-level=debug,--lock-release-wait=1m}"},
			check: func(t *testing.T, d appsv1.Deployment) {
				t.Helper()
				args := managerContainer(t, d).Args
				if got := args[len(args)-2:]; !slices.Equal(got, []string{"--zap-log-level=debug", "--lock-release-wait=1m"}) {
					t.Errorf("last args = %v, want the extra args", got)
				}
			},
		},
		"scheduling": {
			set: []string{
				"nodeSelector.pool=ops", "tolerations[0].key=dedicated", "tolerations[0].operator=Exists",
				"priorityClassName=system-cluster-critical", "replicaCount=2",
			},
			check: func(t *testing.T, d appsv1.Deployment) {
				t.Helper()
				pod := d.Spec.Template.Spec
				if diff := cmp.Diff(map[string]string{"kubernetes.io/os": "linux", "pool": "ops"}, pod.NodeSelector); diff != "" {
					t.Errorf("nodeSelector (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}, pod.Tolerations); diff != "" {
					t.Errorf("tolerations (-want +got):\n%s", diff)
				}
				if pod.PriorityClassName != "system-cluster-critical" || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
					t.Errorf("priorityClassName %q, replicas %v; want system-cluster-critical and 2", pod.PriorityClassName, d.Spec.Replicas)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.check(t, renderedManager(t, tc.set...))
		})
	}
}

// wantImage checks the manager's image.
func wantImage(image string) func(*testing.T, appsv1.Deployment) {
	return func(t *testing.T, d appsv1.Deployment) {
		t.Helper()
		if got := managerContainer(t, d).Image; got != image {
			t.Errorf("image = %q, want %q", got, image)
		}
	}
}

// wantArgs checks that the manager's arguments hold every one of present
// and none of absent.
func wantArgs(present, absent []string) func(*testing.T, appsv1.Deployment) {
	return func(t *testing.T, d appsv1.Deployment) {
		t.Helper()
		args := managerContainer(t, d).Args
		for _, a := range present {
			if !slices.Contains(args, a) {
				t.Errorf("args %v lack %s", args, a)
			}
		}
		for _, a := range absent {
			if slices.Contains(args, a) {
				t.Errorf("args %v hold %s", args, a)
			}
		}
	}
}
