terraform {
  backend "cos" {
    bucket = "tfstate-1250000000"
    region = "ap-guangzhou"

    assume_role {
      role_arn         = "qcs::cam::uin/100000000001:roleName/tfstate"
      session_name     = "backend-operator"
      session_duration = 3600
    }
  }
}
