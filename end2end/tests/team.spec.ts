// An owner invites a support member by mail; the invitee creates their
// account from the invitation, accepts it, and can read the console but
// not issue codes. In English and in Chinese.
import { expect, test } from "@playwright/test";
import { linkIn, openHydrated, PASSWORD, register, signUpByApi, uniqueEmail, waitForMail } from "./fixtures";
import { adminApi, createCourse, snapshot, specTenant, sql } from "./course";

const WORDS = {
  en: {
    team: "Team",
    email: "Email",
    role: "Role",
    support: "Support (read-only)",
    mailRole: "support (read-only)",
    send: "Send invitation",
    sent: "Invitation sent.",
    subject: (tenant: string) => `You are invited to ${tenant}`,
    create: "Create account",
    emailMe: "Email me a link",
    finish: "Finish creating your account",
    name: "Your name",
    password: "Password",
    repeat: "Repeat the password",
    accept: "Accept the invitation",
    welcome: "Welcome to the team!",
    issue: "Issue codes",
    revoke: /^Revoke code/,
  },
  "zh-CN": {
    team: "团队",
    email: "邮箱",
    role: "角色",
    support: "客服（只读）",
    mailRole: "客服（只读）",
    send: "发送邀请",
    sent: "邀请已发送。",
    subject: (tenant: string) => `${tenant} 邀请你加入 AdmitOne 团队`,
    create: "注册账号",
    emailMe: "把链接发给我",
    finish: "完成注册",
    name: "你的名字",
    password: "密码",
    repeat: "再次输入密码",
    accept: "接受邀请",
    welcome: "欢迎加入团队！",
    issue: "生成兑换码",
    revoke: /^作废兑换码/,
  },
} as const;

for (const [locale, w] of Object.entries(WORDS)) {
  test.describe(`in ${locale}`, () => {
    test.use({ locale });

    test("an owner invites a support member who reads the console but cannot issue codes", async ({ page, browser }, testInfo) => {
      test.setTimeout(60_000);
      const course = await createCourse(await adminApi(), { title: `Team course ${locale}` });
      const spec = await specTenant();
      const tenant = spec.id;

      // A second owner of the spec's tenant, signed in on this page by
      // registering.
      const ownerEmail = uniqueEmail(`owner-${locale.toLowerCase()}`);
      await signUpByApi(page.request, ownerEmail, "Olive Owner");
      sql(`INSERT INTO tenant_members (tenant_id, account_id, role) SELECT '${tenant}', id, 'owner' FROM accounts WHERE email = '${ownerEmail}'`);

      // The owner invites from the Team page.
      await openHydrated(page, `/admin/t/${tenant}/team`);
      await expect(page.getByRole("heading", { level: 1, name: w.team })).toBeVisible();
      const email = uniqueEmail(`support-${locale.toLowerCase()}`);
      const form = page.locator("form:has(#invite-role)");
      await form.getByLabel(w.email).fill(email);
      await form.getByLabel(w.role).selectOption("support");
      await form.getByRole("button", { name: w.send }).click();
      await expect(page.getByRole("status").filter({ hasText: w.sent })).toBeVisible();
      await expect(page.locator(`tr[data-invitation="${email}"]`)).toBeVisible();
      await snapshot(page, testInfo, `team-invited-${locale}`);

      // The invitee reads the mail, creates an account from the invitation
      // and accepts it.
      const mail = await waitForMail(email, w.subject(spec.name));
      expect(mail.text).toContain(w.mailRole);
      const invitee = await browser.newContext({ locale });
      const tab = await invitee.newPage();
      await openHydrated(tab, linkIn(mail, "/invitation"));
      await expect(tab.locator(".invitation-intro")).toContainText(email);
      // Registering starts from the address; the mailed link (in the
      // invitee's language) makes the account and comes back here.
      await tab.getByRole("main").getByRole("link", { name: w.create }).click();
      await tab.getByLabel(w.email).fill(email);
      await tab.getByRole("main").getByRole("button", { name: w.emailMe }).click();
      await expect(tab).toHaveURL(/\/invitation\?token=/);
      const signup = await waitForMail(email, w.finish);
      await openHydrated(tab, linkIn(signup, "/register/finish"));
      await tab.getByLabel(w.name).fill("Sam Support");
      await tab.getByLabel(w.password, { exact: true }).fill(PASSWORD);
      await tab.getByLabel(w.repeat).fill(PASSWORD);
      await tab.getByRole("main").getByRole("button", { name: w.create }).click();
      await expect(tab).toHaveURL(/\/invitation\?token=/);
      await tab.locator("body[data-hydrated]").waitFor();
      await tab.getByRole("button", { name: w.accept }).click();
      await expect(tab).toHaveURL(new RegExp(`/admin/t/${tenant}$`));
      await expect(tab.getByRole("status").filter({ hasText: w.welcome })).toBeVisible();
      expect(sql(`SELECT m.role FROM tenant_members m JOIN accounts a ON a.id = m.account_id WHERE a.email = '${email}'`)).toBe("support");

      // Support reads the code table...
      await openHydrated(tab, `/admin/t/${tenant}/s/${course.id}/codes`);
      await expect(tab.locator("tr[data-code]")).toHaveCount(course.codes.length);
      await snapshot(tab, testInfo, `support-code-table-${locale}`);
      await expect(tab.getByRole("button", { name: w.revoke })).toHaveCount(0);
      // ... and cannot issue codes: the form is there, disabled, and the
      // server refuses the post anyway.
      await openHydrated(tab, `/admin/t/${tenant}/s/${course.id}`);
      await expect(tab.locator(".read-only-note")).toBeVisible();
      await expect(tab.getByRole("button", { name: w.issue })).toBeDisabled();
      const forged = await tab.request.post("/api/admin/codes/issue", {
        form: { tenant_id: tenant, share_id: course.id, count: "5", label: "forged" },
      });
      expect(forged.status()).toBe(403);
      expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}'`)).toBe(String(course.codes.length));
      await invitee.close();
    });
  });
}

test("the invitation works for the invited address only", async ({ browser }) => {
  const api = await adminApi();
  const tenant = (await specTenant()).id;
  const invited = uniqueEmail("invited");
  const response = await api.post("/api/admin/team/invite", {
    form: { tenant_id: tenant, email: invited, role: "admin" },
  });
  expect(response.status(), await response.text()).toBeLessThan(400);
  const mail = await waitForMail(invited, "You are invited");
  const other = await browser.newContext();
  const tab = await other.newPage();
  await openHydrated(tab, "/register");
  const someoneElse = uniqueEmail("someone-else");
  await register(tab, someoneElse, "Someone Else");
  await expect(tab.getByRole("status")).toContainText("Welcome");
  await openHydrated(tab, linkIn(mail, "/invitation"));
  await expect(tab.locator(".flash.warning")).toContainText(`This invitation is for ${invited}`);
  await expect(tab.getByRole("button", { name: "Accept the invitation" })).toHaveCount(0);
  expect(sql(`SELECT count(*) FROM tenant_members m JOIN accounts a ON a.id = m.account_id WHERE a.email = '${someoneElse}'`)).toBe("0");
  await other.close();
});
