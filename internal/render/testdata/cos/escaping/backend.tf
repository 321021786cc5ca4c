terraform {
  backend "cos" {
    bucket = "tfstate-1250000000"
    region = "ap-guangzhou"
    prefix = "q\"uote\\back\\\\slash\nnew\r\ttab $${x} %%{ if true }y%%{ endif } $$${lit} %%%{lit} end$ end% {} ü日本🙂 <&>"
    key    = "a$${b}%%{c}.tfstate"

    assume_role {
      role_arn     = "qcs::cam::uin/100000000001:roleName/tfstate"
      session_name = "backend-operator"
      policy       = "q\"uote\\back\\\\slash\nnew\r\ttab $${x} %%{ if true }y%%{ endif } $$${lit} %%%{lit} end$ end% {} ü日本🙂 <&>"
    }
  }
}
