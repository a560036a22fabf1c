# The errors the browser itself shows, without asking the server: a typed
# code's format, checked as it is typed, and the console's upload refusals
# (its XHR reads the API's answer). Apart from errors.ftl so that the
# learner's wasm carries only these, not every domain error (English:
# the error's `Display`, or the API's own message).

code-bad-check-symbol = 兌換碼有輸入錯誤，請核對後重試
code-bad-symbol = 兌換碼只包含字母和數字
code-wrong-length = 兌換碼由 12 位字母和數字組成，例如 ABCD-2345-WXYZ
upload-too-large = 檔案超過了上傳大小上限。
upload-storage-full = 超出了本機構的儲存配額：請刪除檔案或申請更大的配額。
upload-bad-title = 標題需要 1 到 200 個可見字元。
upload-no-file = 請選擇要上傳的檔案。
upload-incomplete = 上傳的資料不完整，請重試。
upload-sign-in-first = 請先登入。
upload-forbidden = 你沒有權限上傳到這裡。
upload-no-share = 找不到這個課程分享。
upload-try-later = 上傳失敗，請稍後重試。
code-foreign-wrong-length = 兌換碼由 4 到 64 位字母和數字組成
