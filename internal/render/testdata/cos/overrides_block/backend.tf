terraform {
  backend "cos" {
    bucket = "tfstate-1250000000"
    region = "ap-guangzhou"

    assume_role {
      role_arn         = "qcs::cam::uin/1:roleName/r"
      session_duration = 3600
      session_name     = "runner"
      policy           = "{}"
    }
  }
}
