// An owner brands their tenant on the Team page (name, accent colour,
// support address, an uploaded logo); its learners see the brand on its
// course pages, and another tenant's course page shows none of it. A bad
// colour is refused with its reason and changes nothing. In English and
// in Simplified Chinese.
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { openHydrated, signUpByApi, uniqueEmail } from "./fixtures";
import { adminApi, createCourse, snapshot, sql } from "./course";

/** A 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);

const WORDS = {
  "en-GB": {
    branding: "Branding",
    name: "Name shown to learners",
    accent: "Accent colour",
    support: "Support email address",
    save: "Save the branding",
    saved: "Branding saved.",
    badAccent: "An accent colour is # and six hex digits",
    logo: "Logo",
    upload: "Upload the logo",
    logoSaved: "Logo saved.",
    questions: "Questions about this course?",
  },
  "zh-CN": {
    branding: "品牌",
    name: "向学员显示的名称",
    accent: "强调色",
    support: "客服邮箱",
    save: "保存品牌设置",
    saved: "品牌设置已保存。",
    badAccent: "强调色请写成 # 加六位十六进制数字",
    logo: "标志",
    upload: "上传标志",
    logoSaved: "标志已保存。",
    questions: "对课程有疑问？",
  },
} as const;

for (const [locale, w] of Object.entries(WORDS)) {
  test.describe(`in ${locale}`, () => {
    test.use({ locale });

    test("an owner brands their tenant and only its learners see it", async ({ page, browser }, testInfo) => {
      test.setTimeout(60_000);
      // A tenant to brand (the spec's own stays plain, to compare with),
      // with a fresh owner and an active course.
      const ownerEmail = uniqueEmail(`brand-owner-${locale.toLowerCase()}`);
      await signUpByApi(page.request, ownerEmail, "Olive Owner");
      const tenant = randomUUID();
      const suffix = tenant.slice(0, 8);
      sql(`INSERT INTO tenants (id, slug, name) VALUES ('${tenant}', 'brand-${suffix}', 'Plain Name')`);
      sql(`INSERT INTO tenant_members (tenant_id, account_id, role) SELECT '${tenant}', id, 'owner' FROM accounts WHERE email = '${ownerEmail}'`);
      const slug = `branded-${suffix}`;
      const created = await page.request.post(`/api/v1/tenants/${tenant}/shares`, {
        data: { title: "Watercolour Basics", slug, status: "active" },
      });
      expect(created.status(), await created.text()).toBe(201);
      const brandName = `Acme Academy ${locale}`;

      await openHydrated(page, `/admin/t/${tenant}/team`);
      const section = page.locator("section.branding");
      await expect(section.getByRole("heading", { name: w.branding, exact: true })).toBeVisible();

      // A colour that is not one: its reason, and nothing stored.
      await section.getByLabel(w.name).fill(brandName);
      // The browser's own check (`pattern`) would stop it first: the
      // server's answer is what is under test.
      await section.locator("form.branding-form").evaluate((form: HTMLFormElement) => {
        form.noValidate = true;
      });
      await section.getByLabel(w.accent).fill("#12345");
      await section.getByRole("button", { name: w.save }).click();
      await expect(section.getByRole("alert").first()).toContainText(w.badAccent);
      expect(sql(`SELECT name || '|' || coalesce(brand_accent, '-') FROM tenants WHERE id = '${tenant}'`)).toBe("Plain Name|-");

      // The brand: name, colour, support address, then the logo.
      await section.getByLabel(w.accent).fill("#2e7d32");
      await section.getByLabel(w.support).fill("help@acme.test");
      await section.getByRole("button", { name: w.save }).click();
      await expect(section.getByRole("status").filter({ hasText: w.saved })).toBeVisible();
      await section.getByLabel(w.logo, { exact: true }).setInputFiles({ name: "logo.png", mimeType: "image/png", buffer: PNG });
      await section.getByRole("button", { name: w.upload }).click();
      await expect(page.getByRole("status").filter({ hasText: w.logoSaved })).toBeVisible();
      await expect(page.locator("section.branding .logo-preview img")).toBeVisible();
      expect(sql(`SELECT name || '|' || brand_accent || '|' || support_email FROM tenants WHERE id = '${tenant}'`)).toBe(
        `${brandName}|#2e7d32|help@acme.test`,
      );
      await snapshot(page, testInfo, `branding-team-${locale}`);

      // A learner (signed out here) sees it on the course's page.
      const visitor = await (await browser.newContext({ locale })).newPage();
      await openHydrated(visitor, `/s/${slug}`);
      await expect(visitor.locator(".provider-name")).toHaveText(brandName);
      const logo = visitor.locator(".provider .provider-logo");
      await expect(logo).toBeVisible();
      expect(await logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(1);
      await expect(visitor.locator(".provider-support")).toContainText(w.questions);
      await expect(visitor.locator(".provider-support a")).toHaveAttribute("href", "mailto:help@acme.test");
      await expect(visitor.locator("main .button").first()).toHaveCSS("background-color", "rgb(46, 125, 50)");
      await snapshot(visitor, testInfo, `branding-course-${locale}`);

      // Another tenant's course: none of it.
      const other = await createCourse(await adminApi(), { title: "Unbranded course" });
      await openHydrated(visitor, `/s/${other.slug}`);
      await expect(visitor.locator("h1")).toHaveText("Unbranded course");
      await expect(visitor.locator(".provider-logo")).toHaveCount(0);
      await expect(visitor.locator(".provider-support")).toHaveCount(0);
      await expect(visitor.locator("body")).not.toContainText(brandName);
      await expect(visitor.locator("main .button").first()).toHaveCSS("background-color", "rgb(31, 95, 191)");
    });
  });
}
