terraform {
  backend "cos" {
    bucket = "tfstate-1250000000"
    region = "ap-guangzhou"
    prefix = "new"
    future_attribute = {
      a = 1
      b = 2
    }

    assume_role {
      role_arn         = "qcs::cam::uin/100000000001:roleName/tfstate"
      session_name     = "backend-operator"
      policy           = "{\"a\":1}"
      future_attribute = ["x"]
    }

    future_block {
      inner = true
    }
  }
}
