terraform {
  backend "cos" {
    bucket = "tfstate-1250000000"
    region = "ap-guangzhou"

    assume_role {
      role_arn     = "qcs::cam::uin/100000000001:roleName/tfstate"
      session_name = "backend-operator"
      policy       = "{\"version\":\"2.0\",\"statement\":[{\"effect\":\"allow\",\"action\":[\"cos:*\"],\"resource\":[\"qcs::cos:$${region}:uid/1250000000:*\"]}]}"
    }
  }
}
