"""The local cloud: the region's AWS account (moto), its ACLs and ELBs applied to the region, its reconciler."""
