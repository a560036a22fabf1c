# The errors the browser itself shows, without asking the server: a typed
# code's format, checked as it is typed, and the console's upload refusals
# (its XHR reads the API's answer). Apart from errors.ftl so that the
# learner's wasm carries only these, not every domain error (English:
# the error's `Display`, or the API's own message).

code-bad-check-symbol = 兑换码有输入错误，请核对后重试
code-bad-symbol = 兑换码只包含字母和数字
code-wrong-length = 兑换码由 12 位字母和数字组成，例如 ABCD-2345-WXYZ
upload-too-large = 文件超过了上传大小上限。
upload-storage-full = 超出了本机构的存储配额：请删除文件或申请更大的配额。
upload-bad-title = 标题需要 1 到 200 个可见字符。
upload-no-file = 请选择要上传的文件。
upload-incomplete = 上传的数据不完整，请重试。
upload-sign-in-first = 请先登录。
upload-forbidden = 你没有权限上传到这里。
upload-no-share = 找不到这个课程分享。
upload-try-later = 上传失败，请稍后重试。
code-foreign-wrong-length = 兑换码由 4 到 64 位字母和数字组成
