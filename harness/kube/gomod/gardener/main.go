// gardener: Gardener's own code for the local seed, from the pinned gardener/gardener module.
//
//	gardener resource-manager <flags>          gardener-resource-manager, Gardener's own command
//	gardener seed-resource-manager --zones a,b  the objects gardenlet's seed reconciler deploys for the
//	                                           seed's gardener-resource-manager, made by Gardener's
//	                                           component code and printed as one JSON list
//
// seed-resource-manager calls what gardenlet calls (sharedcomponent.NewRuntimeGardenerResourceManager
// with the values of pkg/gardenlet/controller/seed/seed/components.go, feature gates at gardenlet's
// defaults) and deploys into an in-memory client, so that the component config, the webhook
// configurations and the CRD are Gardener's; the harness runs the command above with them. Only
// where the process runs differs on the local seed (ports, certificates, the webhooks' address),
// and the harness rewrites exactly those fields.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/gardener/gardener/cmd/gardener-resource-manager/app"
	"github.com/gardener/gardener/cmd/utils"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/component/gardener/resourcemanager"
	sharedcomponent "github.com/gardener/gardener/pkg/component/shared"
	"github.com/gardener/gardener/pkg/features"
	gardenletfeatures "github.com/gardener/gardener/pkg/gardenlet/features"
	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
	fakesecretsmanager "github.com/gardener/gardener/pkg/utils/secrets/manager/fake"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "resource-manager" && os.Args[1] != "seed-resource-manager") {
		fmt.Fprintln(os.Stderr, "usage: gardener resource-manager <flags> | gardener seed-resource-manager --zones a,b,c")
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
	if err := seedResourceManager(); err != nil {
		fmt.Fprintln(os.Stderr, "gardener seed-resource-manager:", err)
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

	var out []map[string]any
	for _, kind := range []string{"ConfigMap", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition", "Deployment"} {
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
