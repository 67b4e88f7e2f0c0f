// gardener: Gardener's own code for the local seed, from the pinned gardener/gardener module.
//
//	gardener resource-manager <flags>          gardener-resource-manager, Gardener's own command
//	gardener seed-resource-manager --zones a,b  the objects gardenlet's seed reconciler deploys for the
//	                                           seed's gardener-resource-manager, made by Gardener's
//	                                           component code and printed as one JSON list
//	gardener shoot-etcd --namespace NS         the Etcd resources (etcd-main, etcd-events) gardenlet
//	                                           makes for a shoot's control plane and the Secrets
//	                                           they name, as one JSON list
//	gardener shoot-kube-apiserver --namespace NS  kube-apiserver's Deployment, PodDisruptionBudget and
//	                                           HorizontalPodAutoscaler as gardenlet makes them
//	gardener druid-crds                        etcd-druid's CustomResourceDefinitions as gardenlet
//	                                           deploys them, as one JSON list
//
// seed-resource-manager calls what gardenlet calls (sharedcomponent.NewRuntimeGardenerResourceManager
// with the values of pkg/gardenlet/controller/seed/seed/components.go, feature gates at gardenlet's
// defaults) and deploys into an in-memory client, so that the component config, the webhook
// configurations and the CRD are Gardener's; the harness runs the command above with them. Only
// where the process runs differs on the local seed (ports, certificates, the webhooks' address),
// and the harness rewrites exactly those fields. shoot-etcd and shoot-kube-apiserver do the same
// with gardenlet's deployers (pkg/component/etcd/etcd, pkg/component/kubernetes/apiserver) and the
// values the botanist gives them for a shoot.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/gardener/gardener/cmd/gardener-resource-manager/app"
	"github.com/gardener/gardener/cmd/utils"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/gardener/gardener/pkg/apis/utils/timewindow"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	kubernetesfake "github.com/gardener/gardener/pkg/client/kubernetes/fake"
	"github.com/gardener/gardener/pkg/component/etcd/etcd"
	"github.com/gardener/gardener/pkg/component/gardener/resourcemanager"
	kubeapiserver "github.com/gardener/gardener/pkg/component/kubernetes/apiserver"
	sharedcomponent "github.com/gardener/gardener/pkg/component/shared"
	"github.com/gardener/gardener/pkg/features"
	gardenletfeatures "github.com/gardener/gardener/pkg/gardenlet/features"
	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
	secretsmanager "github.com/gardener/gardener/pkg/utils/secrets/manager"
	fakesecretsmanager "github.com/gardener/gardener/pkg/utils/secrets/manager/fake"
)

var commands = map[string]func() error{
	"seed-resource-manager": seedResourceManager,
	"shoot-etcd":            shootEtcd,
	"shoot-kube-apiserver":  shootKubeAPIServer,
	"druid-crds":            druidCRDs,
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "resource-manager" && commands[os.Args[1]] == nil) {
		fmt.Fprintln(os.Stderr, "usage: gardener resource-manager <flags> | gardener seed-resource-manager --zones a,b,c | "+
			"gardener shoot-etcd|shoot-kube-apiserver --namespace NS [--failure-tolerance zone|node|none] | gardener druid-crds")
		os.Exit(2)
	}
	which := os.Args[1]
	os.Args = append(os.Args[:1], os.Args[2:]...)
	if which == "resource-manager" {
		utils.DeduplicateWarnings()
		if err := app.NewCommand().ExecuteContext(signals.SetupSignalHandler()); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		return
	}
	if err := commands[which](); err != nil {
		fmt.Fprintf(os.Stderr, "gardener %s: %v\n", which, err)
		os.Exit(1)
	}
}

func seedResourceManager() error {
	zones := flag.String("zones", "", "the seed's zones, comma-separated (seed.spec.provider.zones)")
	namespace := flag.String("namespace", v1beta1constants.GardenNamespace, "the garden namespace")
	flag.Parse()
	if *zones == "" {
		return fmt.Errorf("--zones is required")
	}
	gardenletfeatures.RegisterFeatureGates()

	ctx := context.Background()
	c := fakeclient.NewClientBuilder().WithScheme(kubernetes.SeedScheme).Build()
	secrets := fakesecretsmanager.New(c, *namespace)
	// gardenlet generates the seed's CA before it deploys the component (its webhooks' caBundle).
	if _, err := secrets.Generate(ctx, &secretsutils.CertificateSecretConfig{
		Name: v1beta1constants.SecretNameCASeed, CommonName: "kubernetes", CertType: secretsutils.CACert,
	}); err != nil {
		return err
	}
	// As gardenlet's seed reconciler makes it (newGardenerResourceManager), with no node toleration
	// or network-policy settings in its config.
	grm, err := sharedcomponent.NewRuntimeGardenerResourceManager(c, *namespace, secrets, resourcemanager.Values{
		DefaultSeccompProfileEnabled:         features.DefaultFeatureGate.Enabled(features.DefaultSeccompProfile),
		HighAvailabilityConfigWebhookEnabled: true,
		PriorityClassName:                    v1beta1constants.PriorityClassNameSeedSystemCritical,
		SecretNameServerCA:                   v1beta1constants.SecretNameCASeed,
		Zones:                                strings.Split(*zones, ","),
		PodKubeAPIServerLoadBalancingWebhook: resourcemanager.PodKubeAPIServerLoadBalancingWebhook{
			Enabled: features.DefaultFeatureGate.Enabled(features.IstioTLSTermination),
			Configs: []resourcemanager.PodKubeAPIServerLoadBalancingWebhookConfig{{
				NamespaceSelector: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot},
			}},
		},
		VPAInPlaceUpdatesEnabled: features.DefaultFeatureGate.Enabled(features.VPAInPlaceUpdates),
	})
	if err != nil {
		return err
	}
	if err := grm.Deploy(ctx); err != nil {
		return fmt.Errorf("deploying into the in-memory client: %w", err)
	}

	return printKinds(ctx, c, "ConfigMap", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition", "Deployment")
}

// shoot is a Shoot as the API server defaults one, with the control plane's failure tolerance,
// and an in-memory seed client holding its CAs as gardenlet generates them before it deploys the
// control plane (botanist's caCertConfigurations) and its etcds, which gardenlet deploys first.
type shoot struct {
	*gardencorev1beta1.Shoot
	namespace string
	version   *semver.Version
	client    client.Client
	secrets   secretsmanager.Interface
}

func newShoot(ctx context.Context) (*shoot, error) {
	namespace := flag.String("namespace", "", "the shoot's control plane namespace on the seed")
	tolerance := flag.String("failure-tolerance", "zone", "the shoot's spec.controlPlane.highAvailability.failureTolerance.type: zone, node or none")
	seedVersion := flag.String("seed-version", "1.36.0", "the seed's (and the shoot's) Kubernetes version")
	flag.Parse()
	if *namespace == "" {
		return nil, fmt.Errorf("--namespace is required")
	}
	version, err := semver.NewVersion(*seedVersion)
	if err != nil {
		return nil, fmt.Errorf("--seed-version: %w", err)
	}
	s := &shoot{Shoot: &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Name: "ref", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: gardencorev1beta1.ShootSpec{
			Purpose: new(gardencorev1beta1.ShootPurposeEvaluation),
			Maintenance: &gardencorev1beta1.Maintenance{TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{
				Begin: "220000+0000", End: "230000+0000", // the API server's default window
			}},
		},
		Status: gardencorev1beta1.ShootStatus{UID: "harness-reference"},
	}, namespace: *namespace, version: version}
	switch *tolerance {
	case "zone", "node":
		s.Spec.ControlPlane = &gardencorev1beta1.ControlPlane{HighAvailability: &gardencorev1beta1.HighAvailability{
			FailureTolerance: gardencorev1beta1.FailureTolerance{Type: gardencorev1beta1.FailureToleranceType(*tolerance)},
		}}
	case "none":
	default:
		return nil, fmt.Errorf("--failure-tolerance takes zone, node or none, not %q", *tolerance)
	}
	s.client = fakeclient.NewClientBuilder().WithScheme(kubernetes.SeedScheme).Build()
	// gardenlet's own secrets manager (botanist.New), into the in-memory client: CAs with their
	// bundles, certificates signed by them, as the pods druid makes mount them.
	secrets, err := secretsmanager.New(ctx, logr.Discard(), clock.RealClock{}, s.client,
		v1beta1constants.SecretManagerIdentityGardenlet, secretsmanager.WithNamespaces(s.namespace))
	if err != nil {
		return nil, err
	}
	// botanist.generateCertificateAuthorities: the shoot's CAs, each rotated keeping the old one.
	for _, ca := range []string{v1beta1constants.SecretNameCACluster, v1beta1constants.SecretNameCAClient,
		v1beta1constants.SecretNameCAETCD, v1beta1constants.SecretNameCAETCDPeer, v1beta1constants.SecretNameCAFrontProxy,
		v1beta1constants.SecretNameCAKubelet} {
		if _, err := secrets.Generate(ctx, &secretsutils.CertificateSecretConfig{Name: ca, CommonName: ca, CertType: secretsutils.CACert},
			secretsmanager.Rotate(secretsmanager.KeepOld)); err != nil {
			return nil, err
		}
	}
	s.secrets = secrets
	return s, s.deployEtcd(ctx)
}

// deployEtcd deploys etcd-main and etcd-events as gardenlet does for the shoot (botanist.DefaultEtcd
// and DeployEtcd, without a backup bucket).
func (s *shoot) deployEtcd(ctx context.Context) error {
	ha := v1beta1helper.IsHAControlPlaneConfigured(s.Shoot)
	replicas := int32(1)
	if ha {
		replicas = 3
	}
	window := s.Spec.Maintenance.TimeWindow
	for _, role := range []struct {
		name     string
		class    etcd.Class
		capacity string
	}{{v1beta1constants.ETCDRoleMain, etcd.ClassImportant, "25Gi"}, {v1beta1constants.ETCDRoleEvents, etcd.ClassNormal, "10Gi"}} {
		defrag, err := timewindow.DetermineSchedule("%d %d */3 * *", window.Begin, window.End, s.Status.UID,
			s.CreationTimestamp, timewindow.RandomizeWithinTimeWindow)
		if err != nil {
			return err
		}
		deployer := etcd.New(logr.Discard(), s.client, s.namespace, s.secrets, etcd.Values{
			Role:                     role.name,
			Class:                    role.class,
			Replicas:                 &replicas,
			StorageCapacity:          role.capacity,
			DefragmentationSchedule:  &defrag,
			RuntimeKubernetesVersion: s.version,
			MaintenanceTimeWindow:    *window,
			// getEvictionRequirement for a shoot whose purpose is neither production nor infrastructure
			EvictionRequirement:     new(v1beta1constants.EvictionRequirementInMaintenanceWindowOnly),
			PriorityClassName:       v1beta1constants.PriorityClassNameShootControlPlane500,
			HighAvailabilityEnabled: ha,
		})
		if err := deployer.Deploy(ctx); err != nil {
			return fmt.Errorf("deploying etcd-%s into the in-memory client: %w", role.name, err)
		}
	}
	return nil
}

// shootEtcd prints the Etcd resources gardenlet makes for the shoot and the Secrets they name.
func shootEtcd() error {
	ctx := context.Background()
	s, err := newShoot(ctx)
	if err != nil {
		return err
	}
	return printKinds(ctx, s.client, "Etcd", "Secret")
}

// shootKubeAPIServer deploys kube-apiserver as gardenlet does for the shoot (botanist.DefaultKubeAPIServer
// and DeployKubeAPIServer; without the VPN to the shoot's nodes, which needs a seed's VPN server),
// after its etcds (it mounts etcd's client certificate), and prints its Deployment, budget and autoscaler.
func shootKubeAPIServer() error {
	ctx := context.Background()
	s, err := newShoot(ctx)
	if err != nil {
		return err
	}
	minReplicas := int32(2)
	if v1beta1helper.IsHAControlPlaneConfigured(s.Shoot) {
		minReplicas = 3
	}
	clientSet := kubernetesfake.NewClientSetBuilder().WithClient(s.client).Build()
	kas, err := sharedcomponent.NewKubeAPIServer(ctx, clientSet, s.client, s.namespace, s.ObjectMeta, s.version, s.version,
		s.secrets, "", nil, kubeapiserver.AutoscalingConfig{ // botanist's computeKubeAPIServerAutoscalingConfig
			APIServerResources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("500Mi"),
			}},
			MinReplicas: minReplicas,
			MaxReplicas: 6,
		}, kubeapiserver.VPNConfig{}, v1beta1constants.PriorityClassNameShootControlPlane500, false, false, false, nil, nil, nil, nil)
	if err != nil {
		return err
	}
	external := "api.ref.harness.local"
	_, services, _ := net.ParseCIDR("10.0.0.0/16")
	_, pods, _ := net.ParseCIDR("100.64.0.0/12")
	_, nodes, _ := net.ParseCIDR("10.250.0.0/16")
	if err := sharedcomponent.DeployKubeAPIServer(ctx, s.client, s.namespace, kas,
		kubeapiserver.ComputeKubeAPIServerServiceAccountConfig(nil, external, ""), kubeapiserver.ServerCertificateConfig{},
		kubeapiserver.SNIConfig{}, external, []net.IPNet{*nodes}, []net.IPNet{*services}, []net.IPNet{*pods}, nil,
		nil, nil, "", "", false); err != nil {
		return fmt.Errorf("deploying kube-apiserver into the in-memory client: %w", err)
	}
	return printKinds(ctx, s.client, "Deployment", "PodDisruptionBudget", "HorizontalPodAutoscaler")
}

// druidCRDs deploys etcd-druid's CRDs as gardenlet does (etcd.NewCRD) into an in-memory client and
// prints them.
func druidCRDs() error {
	seedVersion := flag.String("seed-version", "1.36.0", "the seed's Kubernetes version")
	flag.Parse()
	version, err := semver.NewVersion(*seedVersion)
	if err != nil {
		return fmt.Errorf("--seed-version: %w", err)
	}
	ctx := context.Background()
	c := fakeclient.NewClientBuilder().WithScheme(kubernetes.SeedScheme).Build()
	crds, err := etcd.NewCRD(c, version)
	if err != nil {
		return err
	}
	if err := crds.Deploy(ctx); err != nil {
		return fmt.Errorf("deploying into the in-memory client: %w", err)
	}
	return printKinds(ctx, c, "CustomResourceDefinition")
}

// printKinds prints the objects of these kinds the in-memory client holds as one JSON list.
func printKinds(ctx context.Context, c client.Client, kinds ...string) error {
	var out []map[string]any
	for _, kind := range kinds {
		objects, err := list(ctx, c, kind)
		if err != nil {
			return err
		}
		out = append(out, objects...)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// list returns the objects of one kind the component wrote, as JSON objects with their kind.
func list(ctx context.Context, c client.Client, kind string) ([]map[string]any, error) {
	gvks := map[string][2]string{
		"ConfigMap":                      {"", "v1"},
		"MutatingWebhookConfiguration":   {"admissionregistration.k8s.io", "v1"},
		"ValidatingWebhookConfiguration": {"admissionregistration.k8s.io", "v1"},
		"CustomResourceDefinition":       {"apiextensions.k8s.io", "v1"},
		"Deployment":                     {"apps", "v1"},
		"Etcd":                           {"druid.gardener.cloud", "v1alpha1"},
		"Secret":                         {"", "v1"},
		"PodDisruptionBudget":            {"policy", "v1"},
		"HorizontalPodAutoscaler":        {"autoscaling", "v2"},
	}
	gv := gvks[kind]
	items := &unstructured.UnstructuredList{}
	items.SetAPIVersion(strings.TrimPrefix(gv[0]+"/"+gv[1], "/"))
	items.SetKind(kind + "List")
	if err := c.List(ctx, items); err != nil {
		return nil, fmt.Errorf("listing %s: %w", kind, err)
	}
	var out []map[string]any
	for _, item := range items.Items {
		obj := item.UnstructuredContent()
		obj["kind"], obj["apiVersion"] = kind, items.GetAPIVersion()
		out = append(out, obj)
	}
	return out, nil
}
