// machine-controllers: gardener's machine-controller-manager, real, with a machine driver for an
// EC2 API of the harness's choosing (the local cloud, or AWS).
//
//	machine-controllers manager  <flags>   MachineDeployment and MachineSet controllers (MCM's own)
//	machine-controllers machines <flags>   the machine controller, run by MCM's provider library
//
// gardener's AWS provider (machine-controller-manager-provider-aws) is not served by the module
// proxy; this driver is its stand-in, kept to what the harness needs: one instance per Machine,
// found by its Name tag, in the class's subnet; credentials and endpoint from the class's Secret.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	mcmapp "github.com/gardener/machine-controller-manager/cmd/machine-controller-manager/app"
	mcmoptions "github.com/gardener/machine-controller-manager/cmd/machine-controller-manager/app/options"
	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/app"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/app/options"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
)

// The tag every instance of a class carries: what ListMachines reports and the orphan collector
// may terminate. An instance adopted by name gets it when its Machine first claims it.
const classTag = "ha-harness/machine-class"

// providerSpec is a MachineClass's providerSpec.
type providerSpec struct {
	ImageID          string `json:"imageId"`
	InstanceType     string `json:"instanceType"`
	SubnetID         string `json:"subnetId"`
	AvailabilityZone string `json:"availabilityZone"`
}

type ec2Driver struct{}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "manager" && os.Args[1] != "machines") {
		fmt.Fprintln(os.Stderr, "usage: machine-controllers manager|machines [flags]")
		os.Exit(2)
	}
	which := os.Args[1]
	os.Args = append(os.Args[:1], os.Args[2:]...)
	var run func() error
	if which == "manager" {
		s := mcmoptions.NewMCMServer()
		s.AddFlags(pflag.CommandLine)
		run = func() error { return mcmapp.Run(s) }
	} else {
		s := options.NewMCServer()
		s.AddFlags(pflag.CommandLine)
		run = func() error { return app.Run(s, ec2Driver{}) }
	}
	flag.InitFlags()
	logs.InitLogs()
	defer logs.FlushLogs()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}

func decode(class *v1alpha1.MachineClass, secret *corev1.Secret) (*providerSpec, *ec2.Client, error) {
	if class == nil || secret == nil {
		return nil, nil, status.Error(codes.InvalidArgument, "a machine class and its secret are required")
	}
	spec := &providerSpec{}
	if err := json.Unmarshal(class.ProviderSpec.Raw, spec); err != nil {
		return nil, nil, status.Error(codes.InvalidArgument, fmt.Sprintf("providerSpec of %s: %v", class.Name, err))
	}
	get := func(k string) string { return strings.TrimSpace(string(secret.Data[k])) }
	if get("accessKeyID") == "" || get("secretAccessKey") == "" || get("region") == "" {
		return nil, nil, status.Error(codes.InvalidArgument, "the secret needs accessKeyID, secretAccessKey and region")
	}
	cfg := aws.Config{
		Region:      get("region"),
		Credentials: credentials.NewStaticCredentialsProvider(get("accessKeyID"), get("secretAccessKey"), ""),
	}
	client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if endpoint := get("endpoint"); endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	return spec, client, nil
}

// failed maps an EC2 error to the machine code MCM acts on: refused credentials stay refused.
func failed(what string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId":
			return status.Error(codes.Unauthenticated, fmt.Sprintf("%s: %v", what, err))
		}
	}
	return status.Error(codes.Internal, fmt.Sprintf("%s: %v", what, err))
}

func providerID(i ec2types.Instance) string {
	return fmt.Sprintf("aws:///%s/%s", aws.ToString(i.Placement.AvailabilityZone), aws.ToString(i.InstanceId))
}

// byName is the machine's live instance (pending, running, stopping or stopped), or nil.
func byName(ctx context.Context, client *ec2.Client, name string) (*ec2types.Instance, error) {
	out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:Name"), Values: []string{name}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	if err != nil {
		return nil, failed("describing instances", err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			return &i, nil
		}
	}
	return nil, nil
}

func (ec2Driver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	spec, client, err := decode(req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	name := req.Machine.Name
	found, err := byName(ctx, client, name)
	if err != nil {
		return nil, err
	}
	if found == nil {
		tags := []ec2types.Tag{{Key: aws.String("Name"), Value: aws.String(name)},
			{Key: aws.String(classTag), Value: aws.String(req.MachineClass.Name)}}
		out, err := client.RunInstances(ctx, &ec2.RunInstancesInput{
			ImageId: aws.String(spec.ImageID), InstanceType: ec2types.InstanceType(spec.InstanceType),
			SubnetId: aws.String(spec.SubnetID), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags}},
		})
		if err != nil {
			return nil, failed("running an instance", err)
		}
		found = &out.Instances[0]
	} else if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{aws.ToString(found.InstanceId)},
		Tags: []ec2types.Tag{{Key: aws.String(classTag), Value: aws.String(req.MachineClass.Name)}}}); err != nil {
		return nil, failed("tagging an adopted instance", err)
	}
	return &driver.CreateMachineResponse{ProviderID: providerID(*found), NodeName: name}, nil
}

func (ec2Driver) InitializeMachine(context.Context, *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	return nil, status.Error(codes.Unimplemented, "nothing to initialize")
}

func (ec2Driver) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	_, client, err := decode(req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	found, err := byName(ctx, client, req.Machine.Name)
	if err != nil || found == nil {
		return &driver.DeleteMachineResponse{}, err
	}
	if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(found.InstanceId)}}); err != nil {
		return nil, failed("terminating an instance", err)
	}
	return &driver.DeleteMachineResponse{}, nil
}

func (ec2Driver) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	_, client, err := decode(req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	found, err := byName(ctx, client, req.Machine.Name)
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, status.Error(codes.NotFound, fmt.Sprintf("no instance named %s", req.Machine.Name))
	}
	// An instance not yet claimed (no class tag) is created, that is adopted, through CreateMachine.
	for _, t := range found.Tags {
		if aws.ToString(t.Key) == classTag {
			return &driver.GetMachineStatusResponse{ProviderID: providerID(*found), NodeName: req.Machine.Name}, nil
		}
	}
	return nil, status.Error(codes.NotFound, fmt.Sprintf("instance %s is not yet claimed", aws.ToString(found.InstanceId)))
}

func (ec2Driver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	_, client, err := decode(req.MachineClass, req.Secret)
	if err != nil {
		return nil, err
	}
	out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + classTag), Values: []string{req.MachineClass.Name}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	if err != nil {
		return nil, failed("listing instances", err)
	}
	listed := map[string]string{}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			for _, t := range i.Tags {
				if aws.ToString(t.Key) == "Name" {
					listed[providerID(i)] = aws.ToString(t.Value)
				}
			}
		}
	}
	return &driver.ListMachinesResponse{MachineList: listed}, nil
}

func (ec2Driver) GetVolumeIDs(context.Context, *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	return &driver.GetVolumeIDsResponse{}, nil
}
