# A small "network" stack for the demo and the end to end tests. It has
# outputs of every kind (string, number, list, map, sensitive) and no
# resources, so `terraform init` needs no provider download.
#
# It declares no backend: a runner adds the rendered backend.tf next to this
# file, or backend_partial.tf and runs
#   terraform init -backend-config=backend.tfbackend
# (see docs/runner-pod.md).

variable "nat_gateway_count" {
  type    = number
  default = 2
}

output "vpc_id" {
  value = "vpc-0a1b2c3d4e5f"
}

output "nat_gateway_count" {
  value = var.nat_gateway_count
}

output "subnet_ids" {
  value = ["subnet-0aa11", "subnet-0bb22", "subnet-0cc33"]
}

output "cidr_blocks" {
  value = {
    private = "10.0.1.0/24"
    public  = "10.0.2.0/24"
  }
}

output "db_password" {
  value     = "demo-db-password"
  sensitive = true
}
