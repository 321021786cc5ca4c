terraform {
  backend "cos" {
    bucket           = "tfstate-1250000000"
    region           = "ap-guangzhou"
    prefix           = "teams/app"
    key              = "app.tfstate"
    encrypt          = true
    acl              = "public-read"
    accelerate       = false
    endpoint         = "https://cos-internal.ap-guangzhou.tencentcos.cn"
    domain           = "internal.tencentcloudapi.com"
    future_attribute = "x"

    assume_role {
      role_arn         = "qcs::cam::uin/100000000001:roleName/tfstate"
      session_name     = "backend-operator"
      session_duration = 900
      policy           = "{\"version\":\"2.0\"}"
      external_id      = "ext-123"
    }
  }
}
