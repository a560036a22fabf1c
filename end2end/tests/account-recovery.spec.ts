// A learner who forgot their password gets back to the course they hold:
// "Forgot password", the mail read from the SMTP server, a new password,
// sign in, the course still theirs. In English and in Chinese.
import { expect, test } from "@playwright/test";
import { linkIn, openHydrated, waitForMail } from "./fixtures";
import { adminApi, createCourse, newLearner, shareState, snapshot, sql } from "./course";

const WORDS = {
  en: {
    forgotLink: "Forgot your password?",
    email: "Email",
    send: "Send the link",
    sent: "If an account uses this address",
    subject: "Reset your password",
    newPassword: "New password",
    repeat: "Repeat the new password",
    set: "Set the new password",
    done: "Your password is reset",
    password: "Password",
    signIn: "Sign in",
    signOut: "Sign out",
    notice: "Your password was changed",
    code: "Access code",
    useCode: "Use this code",
    lesson: "Lesson 1: Ownership",
  },
  "zh-CN": {
    forgotLink: "忘记密码？",
    email: "邮箱",
    send: "发送链接",
    sent: "如果有账号使用这个邮箱",
    subject: "重置你的密码",
    newPassword: "新密码",
    repeat: "再次输入新密码",
    set: "设置新密码",
    done: "密码已重置",
    password: "密码",
    signIn: "登录",
    signOut: "退出登录",
    notice: "你的密码已修改",
    code: "兑换码",
    useCode: "使用此兑换码",
    lesson: "Lesson 1: Ownership",
  },
} as const;

for (const [locale, w] of Object.entries(WORDS)) {
  test.describe(`in ${locale}`, () => {
    test.use({ locale });

    test("forgot password: reset from the mail, sign in, still hold the course", async ({ browser }, testInfo) => {
      // Three mailbox round trips: the registration, the reset, the notice.
      test.setTimeout(60_000);
      const course = await createCourse(await adminApi());
      // The learner holds the course on one device.
      const phone = await browser.newContext({ locale });
      const email = await newLearner(phone, `reset-${locale.toLowerCase()}`);
      const page = await phone.newPage();
      await openHydrated(page, `/s/${course.slug}`);
      await page.getByLabel(w.code).fill(course.codes[0]);
      await page.getByRole("button", { name: w.useCode }).click();
      await expect(shareState(page)).toHaveAttribute("data-state", "pending");
      await page.getByRole("link", { name: w.lesson }).click();
      await expect(page.locator(".bound-note")).toContainText(email);
      await phone.close();

      // Another day, another browser: the password is forgotten.
      const laptop = await browser.newContext({ locale });
      const tab = await laptop.newPage();
      await openHydrated(tab, "/login");
      await tab.getByRole("link", { name: w.forgotLink }).click();
      // The sign-in form (with its own email field) stays until the page's
      // chunk has arrived.
      await expect(tab.getByRole("heading", { level: 1, name: w.forgotLink })).toBeVisible();
      await tab.getByLabel(w.email).fill(email);
      await tab.getByRole("button", { name: w.send }).click();
      await expect(tab.getByRole("status")).toContainText(w.sent);

      const mail = await waitForMail(email, w.subject);
      expect(mail.html).toContain("/reset-password?token=");
      await tab.goto(linkIn(mail, "/reset-password"));
      await tab.getByLabel(w.newPassword, { exact: true }).fill("my new password 2026");
      await tab.getByLabel(w.repeat).fill("my new password 2026");
      await snapshot(tab, testInfo, `reset-form-${locale}`);
      await tab.getByRole("button", { name: w.set }).click();
      await expect(tab.getByRole("status")).toContainText(w.done);

      // Signed in with the new password, the course is still theirs.
      await tab.getByLabel(w.email).fill(email);
      await tab.getByLabel(w.password, { exact: true }).fill("my new password 2026");
      await tab.getByRole("main").getByRole("button", { name: w.signIn }).click();
      // Signed in: the menu offers to sign out.
      await expect(tab.getByRole("navigation", { name: /Main|主导航/ }).getByRole("button", { name: w.signOut })).toBeVisible();
      await openHydrated(tab, `/s/${course.slug}`);
      await expect(shareState(tab)).toHaveAttribute("data-state", "has-access");
      await expect(tab.locator(".bound-note")).toContainText(email);
      await snapshot(tab, testInfo, `after-reset-${locale}`);
      await waitForMail(email, w.notice);

      // The link worked once.
      await tab.goto(linkIn(mail, "/reset-password"));
      await expect(tab.locator(".link-invalid")).toBeVisible();
      expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`)).toBe("1");
      await laptop.close();
    });
  });
}
