terraform {
  backend "cos" {
    bucket     = "tfstate-1250000000"
    region     = "ap-guangzhou"
    accelerate = true
  }
}
